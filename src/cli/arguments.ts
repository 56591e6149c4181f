/** Option values as the commands take them, each refused in one line that says what was expected. */
import { CliError } from './command.js';

const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
const DURATION = /^(?:\d+(?:ms|s|m|h|d))+$/;
const DURATION_PART = /(\d+)(ms|s|m|h|d)/g;
/** An ISO 8601 date, with or without a time and zone: what `--since` takes besides a duration. */
const ISO_TIME = /^\d{4}-\d\d-\d\d(?:[T ][\d:.]+(?:Z|[+-]\d\d:?\d\d)?)?$/;

/** '90s', '15m', '1h30m', '2d', '500ms': milliseconds. */
export function parseDuration(option: string, value: string): number {
  if (!DURATION.test(value)) {
    throw new CliError('usage', `--${option} ${value}: expected a duration such as 30s, 15m, 1h30m or 2d`);
  }
  let ms = 0;
  for (const [, amount, unit] of value.matchAll(DURATION_PART)) ms += Number(amount) * UNIT_MS[unit as keyof typeof UNIT_MS];
  return ms;
}

/** `--since`: a point in time, or a duration back from the database's clock. */
export type Since = { at: Date } | { agoMs: number };

export function parseSince(value: string): Since {
  if (ISO_TIME.test(value) && !Number.isNaN(Date.parse(value))) return { at: new Date(value) };
  if (DURATION.test(value)) return { agoMs: parseDuration('since', value) };
  throw new CliError('usage', `--since ${value}: expected an ISO time (2025-06-01T12:00:00Z) or a duration back from now (1h, 2d)`);
}

export function parseCount(option: string, value: string, max: number): number {
  const count = /^\d+$/.test(value) ? Number(value) : NaN;
  if (!(count >= 1 && count <= max)) throw new CliError('usage', `--${option} ${value}: expected a whole number from 1 to ${max}`);
  return count;
}

export function parseChoice<T extends string>(option: string, value: string, choices: readonly T[]): T {
  if (!(choices as readonly string[]).includes(value)) throw new CliError('usage', `--${option} ${value}: expected one of ${choices.join(', ')}`);
  return value as T;
}
