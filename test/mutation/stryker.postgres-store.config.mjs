// Mutation testing of the PostgreSQL store: `npm run test:mutation -- --only=postgres`. It needs a
// database like the suite does (TEST_DATABASE_URL, else Docker, else embedded PostgreSQL).
// docs/MUTATION.md has the last result and what the survivors mean.
import { strykerTarget } from './stryker-target.mjs';

export default strykerTarget('postgres', {
  mutate: [
    'src/postgres/postgres-task-store.ts',
    'src/postgres/input-requests.ts',
    'src/postgres/retention.ts',
    'src/postgres/store-calls.ts',
    'src/postgres/task-gate.ts',
    'src/postgres/task-rows.ts',
    'src/postgres/task-statements.ts',
    'src/postgres/task-dependents.ts',
    'src/postgres/task-watcher.ts',
    'src/postgres/task-changes.ts',
    'src/postgres/reaper.ts',
  ],
  // Each mutant's tests wait on PostgreSQL.
  timeoutMS: 20_000,
});
