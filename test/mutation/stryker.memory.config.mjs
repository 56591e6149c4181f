// Mutation testing of the contract and the memory store: `npm run test:mutation -- --only=memory`.
// docs/MUTATION.md has the last result and lists every survivor.
//
// Survivors that are equivalent mutants (no test can tell them from the original; left, not
// contorted around):
// - contract/listing.ts CURSOR_TEXT and contract/validation.ts TASK_ID_PATTERN: dropping `^` or `$`.
//   decodeCursor accepts a cursor only if encoding the parsed position gives back the same text;
//   an id with more around its 32 hex digits names no task either way (looked up, it is not found).
// - Encodings and unused names: `'utf8'` blanked in Buffer calls (UTF-8 is the default), the root
//   frame's `key ?? ''` in plain-json.ts (the root has no key), the `'custom'` issue code blanked
//   in validation.ts (the message and path are what a caller reads).
// - Key checks on arrays (plain-json.ts `!frame.isArray` forced true): an index is never NUL, a
//   lone surrogate nor `__proto__`. sameJson's array branch (json.ts) skipped: compared as objects,
//   two arrays are equal exactly when their lengths and items are.
// - A spent input-request key (contract/input-requests.ts `held.state === 'spent'`, and the state
//   the memory store reports for it): a spent key carries no request, so it never matches the one
//   asked again, and reissuing it is refused by the other half of the condition. Likewise the
//   `'outstanding'` state blanked in memory/input-requests.ts: only `'spent'` is ever tested for.
// - contract/timers.ts: siftUp's `<=` as `<` (two deadlines of one millisecond fire in the same
//   fireDue); siftDown's comparisons (`<` as `<=`, or forced true): remove() follows siftDown with
//   siftUp, which carries the moved deadline back up the same path, so the heap ends the same;
//   re-arming or clearing the one timer when nothing requires it (schedule, remove, arm); `unref?.`
//   made `unref` (Node's timers always have it).
// - contract/ids.ts: refilling the random pool on every id rather than when it runs out.
// - cancellation.ts `whenCancelled`: `{ once: true }` (a token is raised once). waiters.ts: cloning
//   a null outcome (cloneJson(null) is null).
// - memory/task-table.ts: `entry.kind === 'live' &&` forced true in reap, reclaimExpiredPayloads and
//   and `entry.kind === 'tombstone'` forced true in reap's purge: a
//   tombstone has no deadline (isExpiredAt is false) and a live task no expiredAtMs (the age is
//   NaN); the expiry timer's guard that its entry is still there (remove and clear stop the timer
//   first); `expirySignalled` (a second signal finds no waiters, raises a raised token again, and
//   reports a change already queued); a snapshot built for an empty list of waiters.
// - memory/retention.ts: fits()'s shortcut for `delta <= 0` and its first comparison (`<=` as `<`),
//   which the same comparison after reclaiming expired payloads repeats; checkMessage of a null
//   message (4 bytes, refused only under a maxPayloadBytes too small for any input request).
// - memory/effect-queue.ts `defer` pushing with no operation running: every defer runs inside one.
// - memory/memory-task-store.ts: the cleanup pass's `!this.closed` (close() stops the pass) and
//   close()'s `if (this.closed) return` (a second close clears what is already empty).
// - memory/change-watchers.ts: the flush's `?? []` (reached when the last watch closes between a
//   report and its flush; no listener is called), clear() emptied (nothing changes a closed store).
// Not equivalent, but out of reach of a test:
// - the retry on an id collision (memory-task-store.ts `while (this.table.has(taskId))`, and
//   `has` itself): 128 random bits never collide in a test.
// - change-watchers.ts close() leaving an empty listener set in its map: only memory tells.
// - validation.ts: the shapes of the input-request union emptied, its discriminator blanked, or
//   plainJson's body emptied. zod then throws as the module loads, so every test would fail; Stryker's vitest runner counts a
//   test file that fails to load as one whose tests all passed.
import { strykerTarget } from './stryker-target.mjs';

export default strykerTarget('memory', {
  tests: 'memory',
  mutate: ['src/contract/**/*.ts', 'src/memory/**/*.ts', '!src/**/index.ts'],
  timeoutMS: 10_000,
});
