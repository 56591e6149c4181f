/**
 * The text form of a schema snapshot (schema-snapshot.ts), and what tells two snapshots apart.
 *
 * A snapshot is a tree of labelled entries ("table tasks" > "column owner" > "type: text"), one
 * entry a line, indented two spaces a level: `label`, or `label: value`, or `label:` followed by
 * the lines of a value of several lines, each as `| line` one level deeper. Labels are unique
 * among their siblings, so two trees are compared label by label.
 */

export interface SnapshotEntry {
  label: string;
  /** Absent for a flag such as `not null`, whose presence is the information. */
  value?: string;
  children: SnapshotEntry[];
}

export function renderSnapshot(header: string[], entries: SnapshotEntry[]): string {
  const lines = header.map((line) => `# ${line}`);
  entries.forEach((entry, index) => {
    // A blank line around every entry of more than one line; one-line entries (indexes) stay together.
    if (index === 0 || !isOneLine(entry) || !isOneLine(entries[index - 1]!)) lines.push('');
    lines.push(...renderEntry(entry, ''));
  });
  return `${lines.join('\n')}\n`;
}

const isOneLine = (entry: SnapshotEntry) => entry.children.length === 0 && !entry.value?.includes('\n');

function renderEntry({ label, value, children }: SnapshotEntry, indent: string): string[] {
  const deeper = `${indent}  `;
  const lines =
    value === undefined
      ? [`${indent}${label}`]
      : value.includes('\n')
        ? [`${indent}${label}:`, ...value.split('\n').map((line) => `${deeper}|${line === '' ? '' : ` ${line}`}`)]
        : [`${indent}${label}: ${value}`];
  return lines.concat(children.flatMap((child) => renderEntry(child, deeper)));
}

/** The entries of a snapshot's text; `#` lines and blank lines are skipped. */
export function parseSnapshot(text: string): SnapshotEntry[] {
  const roots: SnapshotEntry[] = [];
  // The last entry seen at each depth: a line at depth d belongs to the entry at d - 1.
  const open: SnapshotEntry[] = [];
  // The entry whose value of several lines is being read, and those lines so far.
  let continued: { entry: SnapshotEntry; lines: string[] } | undefined;
  text.split('\n').forEach((line, index) => {
    if (line.trim() === '' || line.startsWith('#')) return;
    const indent = line.length - line.trimStart().length;
    const depth = indent / 2;
    const content = line.slice(indent);
    if (!Number.isInteger(depth) || depth > open.length) throw parseError(index, 'indented deeper than the entry above it');
    if (content === '|' || content.startsWith('| ')) {
      if (continued === undefined || depth !== open.length) throw parseError(index, 'a value line with no `label:` above it');
      continued.lines.push(content.slice(2));
      continued.entry.value = continued.lines.join('\n');
      return;
    }
    const separator = content.indexOf(': ');
    const entry: SnapshotEntry =
      separator === -1 ? { label: content, children: [] } : { label: content.slice(0, separator), value: content.slice(separator + 2), children: [] };
    continued = undefined;
    if (separator === -1 && content.endsWith(':')) {
      entry.label = content.slice(0, -1);
      continued = { entry, lines: [] };
    }
    open.length = depth;
    (depth === 0 ? roots : open[depth - 1]!.children).push(entry);
    open.push(entry);
  });
  return roots;
}

function parseError(index: number, problem: string): Error {
  return new Error(`schema snapshot, line ${index + 1}: ${problem}`);
}

/**
 * What differs between a live snapshot and the expected one, one line per difference, each naming
 * its object first ("table tasks, column owner: type text, expected bigint"), in the expected
 * snapshot's order with everything unexpected after it: a table's differences come together.
 */
export function compareSnapshots(actual: SnapshotEntry[], expected: SnapshotEntry[]): string[] {
  return compareChildren([], actual, expected);
}

function compareChildren(path: string[], actual: SnapshotEntry[], expected: SnapshotEntry[]): string[] {
  const actualByLabel = new Map(actual.map((entry) => [entry.label, entry]));
  const expectedLabels = new Set(expected.map((entry) => entry.label));
  const differences: string[] = [];
  for (const want of expected) {
    const have = actualByLabel.get(want.label);
    if (have === undefined) differences.push(`${[...path, want.label].join(', ')}: missing`);
    else differences.push(...compareEntry(path, have, want));
  }
  for (const have of actual) {
    if (expectedLabels.has(have.label)) continue;
    const shown = have.value !== undefined && !have.value.includes('\n') ? ` (${have.value})` : '';
    differences.push(`${[...path, have.label].join(', ')}: unexpected${shown}`);
  }
  return differences;
}

function compareEntry(path: string[], actual: SnapshotEntry, expected: SnapshotEntry): string[] {
  const differences: string[] = [];
  if (actual.value !== expected.value) {
    const [have, want] = [actual.value ?? '(none)', expected.value ?? '(none)'];
    if (have.includes('\n') || want.includes('\n')) {
      differences.push(`${[...path, actual.label].join(', ')}: ${firstDifferentLine(have, want)}`);
    } else {
      // "table tasks, column owner: type text, expected bigint": the entry's own label reads as a word.
      const where = path.length === 0 ? `${actual.label}:` : `${path.join(', ')}: ${actual.label}`;
      differences.push(`${where} ${have}, expected ${want}`);
    }
  }
  return differences.concat(compareChildren([...path, actual.label], actual.children, expected.children));
}

function firstDifferentLine(actual: string, expected: string): string {
  const [have, want] = [actual.split('\n'), expected.split('\n')];
  let line = 0;
  while (have[line] === want[line]) line++;
  const quote = (text: string | undefined) => (text === undefined ? 'nothing' : JSON.stringify(text.trim()));
  return `line ${line + 1} ${quote(have[line])}, expected ${quote(want[line])}`;
}
