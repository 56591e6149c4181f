/**
 * The keyset cursor `listTasks` hands out: the position of the last task on a page, as
 * (createdAt, taskId). Tasks are listed in that order, so the next page starts strictly after it,
 * and tasks created or removed between pages never shift or repeat the ones that follow.
 *
 * Callers treat the string as opaque. It is base64url so it travels in URLs and JSON untouched.
 */
import { invalidInput } from './errors.js';

export interface ListPosition {
  createdAtMs: number;
  taskId: string;
}

const CURSOR_TEXT = /^(\d{1,16})\.([0-9a-f]{32})$/;

export function encodeCursor(position: ListPosition): string {
  return Buffer.from(`${position.createdAtMs}.${position.taskId}`, 'utf8').toString('base64url');
}

/** Throws `invalid_input` for anything `encodeCursor` did not produce. */
export function decodeCursor(cursor: string): ListPosition {
  const match = CURSOR_TEXT.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  const createdAtMs = match ? Number(match[1]) : NaN;
  const position = match && Number.isSafeInteger(createdAtMs) ? { createdAtMs, taskId: match[2]! } : null;
  // Node's base64url decoder skips characters it does not know, so only a round trip proves the
  // cursor is one this store wrote.
  if (!position || encodeCursor(position) !== cursor) {
    throw invalidInput('options.cursor', 'not a cursor this store issued');
  }
  return position;
}

/** Listing order: creation time, then task id, both ascending. */
export function comparePositions(a: ListPosition, b: ListPosition): number {
  if (a.createdAtMs !== b.createdAtMs) return a.createdAtMs - b.createdAtMs;
  return a.taskId < b.taskId ? -1 : a.taskId > b.taskId ? 1 : 0;
}
