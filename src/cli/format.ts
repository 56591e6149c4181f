/** How the commands show values to people: times, durations, owners and tables. */

/** '350ms', '4.2s', '2s', '3m 05s', '2h 14m', '3d 4h': two units at most, enough to read at a glance. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  if (ms < 60_000) return `${(Math.floor(ms / 100) / 10).toFixed(1).replace(/\.0$/, '')}s`;
  const seconds = Math.floor(ms / 1000);
  const [days, hours, minutes] = [Math.floor(seconds / 86_400), Math.floor(seconds / 3600) % 24, Math.floor(seconds / 60) % 60];
  const pad = (n: number) => String(n).padStart(2, '0');
  if (days > 0) return `${days}d ${hours}h`;
  if (hours > 0) return `${hours}h ${pad(minutes)}m`;
  return `${minutes}m ${pad(seconds % 60)}s`;
}

/** UTC, to the second: the width of a table column. */
export function formatTime(time: Date | null): string {
  return time === null ? '-' : time.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** null (created without a principal) and '' (a real, empty owner) must look different. */
export function formatOwner(owner: string | null): string {
  return owner === null ? '-' : owner === '' ? '""' : owner;
}

export function truncate(text: string | null, width: number): string {
  if (text === null) return '';
  const line = text.replace(/\s+/g, ' ');
  return line.length <= width ? line : `${line.slice(0, width - 1)}…`;
}

/** Columns padded to their widest cell, two spaces apart; the last one is not padded. */
export function formatTable(headers: string[], rows: string[][]): string[] {
  const widths = headers.map((header, i) => Math.max(header.length, ...rows.map((row) => row[i]!.length)));
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(headers), ...rows.map(line)];
}

/** Label and value lines with the values aligned, for `status` and `show`. */
export function formatFields(fields: [string, string][]): string[] {
  const width = Math.max(...fields.map(([label]) => label.length));
  return fields.map(([label, value]) => `${label.padEnd(width)}  ${value}`);
}

/** '1 task', '3 tasks'. */
export function count(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}
