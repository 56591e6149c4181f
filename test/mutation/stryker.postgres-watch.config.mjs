// Mutation testing of what the PostgreSQL store watches (completion waiters, tokens, the change
// feed): `npm run test:mutation -- --only=postgres-watch`. Needs a database, as postgres-store.
import { strykerTarget } from './stryker-target.mjs';

export default strykerTarget('postgres-watch', {
  tests: 'postgres-watch',
  mutate: ['src/postgres/task-watcher.ts', 'src/postgres/task-changes.ts'],
  timeoutMS: 20_000,
});
