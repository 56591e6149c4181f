// Mutation testing of what the PostgreSQL store watches (completion waiters, tokens, the change
// feed): `npm run test:mutation -- --only=postgres-watch`. Needs a database, as postgres-store.
//
// Survivors that are equivalent, by reading (docs/MUTATION.md lists every survivor):
// - task-changes.ts `report`: `if (this.closed) return` dropped: close() has emptied the watch map,
//   and report() queues only watched ids.
// - task-changes.ts `unwatch`: the deadline of a task no one watches any more left armed: when it
//   fires, report() finds no watcher; close() clears the deadline queue.
// - task-watcher.ts `updatePolling`: `!this.closed` dropped: close() has emptied waiters and tokens.
import { strykerTarget } from './stryker-target.mjs';

export default strykerTarget('postgres-watch', {
  tests: 'postgres-watch',
  mutate: ['src/postgres/task-watcher.ts', 'src/postgres/task-changes.ts'],
  timeoutMS: 20_000,
});
