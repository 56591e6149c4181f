/**
 * The input-request protocol's rules, which both stores apply to their own records.
 *
 * A request key names one question for the task's whole life (SEP-2663), which is what lets a
 * client deduplicate across polls: a key that was answered, or dropped from an earlier set
 * (superseded), is spent and may not come back, and an outstanding key may be carried forward only
 * with the identical request.
 */
import { TaskStoreError } from './errors.js';
import { sameJson, sortedKeys } from './json.js';
import type { AppliedInputResponses, InputRequests } from './types.js';

/** What a task holds under a key it once issued. */
export type IssuedKey = { state: 'spent' } | { state: 'outstanding'; request: unknown };

/** Throws `invalid_transition`, naming them, if any key of `requests` may not be issued again. */
export function checkKeysReusable(requests: InputRequests, issued: (key: string) => IssuedKey | undefined): void {
  const reused = sortedKeys(Object.keys(requests)).filter((key) => {
    const held = issued(key);
    return held !== undefined && (held.state === 'spent' || !sameJson(held.request, requests[key]));
  });
  if (reused.length === 0) return;
  throw new TaskStoreError(
    'invalid_transition',
    `input request keys must be unique over a task's lifetime, but ${reused.join(', ')} already ${reused.length === 1 ? 'was' : 'were'} used by this task; use a new key to ask again`,
  );
}

/**
 * What answering `responseKeys` does. `outstanding` is empty unless the task is `input_required`:
 * only a task waiting for input takes answers. Keys that are not outstanding (never issued, already
 * answered, superseded) are ignored, not refused: to a client retrying a `tasks/update` they are
 * indistinguishable. `complete` means the task goes back to `working`, if it was waiting.
 */
export function classifyResponses(responseKeys: string[], outstanding: ReadonlySet<string>): AppliedInputResponses {
  const keys = sortedKeys(responseKeys);
  const answered = new Set(responseKeys);
  const stillOutstanding = sortedKeys([...outstanding].filter((key) => !answered.has(key)));
  return {
    accepted: keys.filter((key) => outstanding.has(key)),
    ignored: keys.filter((key) => !outstanding.has(key)),
    stillOutstanding,
    complete: stillOutstanding.length === 0,
  };
}
