// Mutation testing of what the PostgreSQL store watches (completion waiters, tokens, the change
// feed): `npm run test:mutation -- --only=postgres-watch`. Needs a database, as postgres-store.
//
// Survivors that are equivalent, by reading (docs/MUTATION.md lists every survivor):
// - Batching (task-changes.ts `report`, task-watcher.ts `recheck`): the `flushScheduled` /
//   `recheckScheduled` flags and the `due.size === 0` early return. Every flush drains the one
//   shared `due` set, so an extra flush finds it empty: no report twice, no statement more.
//   Likewise `report` queuing ids nobody watches, the flush's `?? []` (reached only when the last
//   watch of a task closes between a report and its flush; no listener is called either way), and
//   `recheck` of ids nobody watches (`deadlineMoved`, `announced` with `isWatching` forced true):
//   the flush drops them. The flush's `filter(isWatching)` and `ids.length > 0` differ only when
//   every queued task stopped being watched in the same tick: one read of rows nobody waits for.
// - After close(): `closed` left false, `if (this.closed) return` dropped, a flag batch run
//   anyway. close() has rejected every wait and emptied the waiters, tokens, watches and the
//   unflagged batch, so whatever still runs finds nothing to settle or report.
// - Deadlines of exactly 0 ms (`msUntilExpiry <= 0` as `< 0`, twice): the database's remaining
//   time for a task created or retimed in the past is negative, never exactly 0.000.
// - `deadlineMoved`'s `msUntilExpiry !== null` forced true: setTtl always leaves a finite TTL.
// - The abort listener's `{ once: true }`: the wait's settle removes the listener, abort included.
// - `raiseToken` clearing the deadline while a wait still watches the task: each path that raises
//   a token with a wait pending also re-reads the task (a cancel settles it, a past deadline is
//   read again), which ends the wait or arms the deadline anew.
// - `armDeadlines` (task-changes.ts) arming a task whose watch closed while the read was in flight,
//   or one already expired: the deadline fires into `report`, which drops unwatched ids; an expired
//   watched task is reported once more, a hint.
// Not equivalent, but out of reach of a test: `reread` finding a task terminal in its state read
// and not yet in its outcome read (the two run in parallel on two connections; the completion
// must commit between them), where it reads again rather than resolve the waiters.
import { strykerTarget } from './stryker-target.mjs';

export default strykerTarget('postgres-watch', {
  tests: 'postgres-watch',
  mutate: ['src/postgres/task-watcher.ts', 'src/postgres/task-changes.ts'],
  timeoutMS: 20_000,
});
