// Mutation testing of the SQL the PostgreSQL store's calls run and what maps it: its statements,
// rows, payload encoding, the per-task gate and the dependents' deletes.
// `npm run test:mutation -- --only=postgres-statements`. Needs a database, as postgres-store.
import { strykerTarget } from './stryker-target.mjs';

export default strykerTarget('postgres-statements', {
  tests: 'postgres',
  mutate: [
    'src/postgres/task-statements.ts',
    'src/postgres/task-rows.ts',
    'src/postgres/retention.ts',
    'src/postgres/task-gate.ts',
    'src/postgres/task-dependents.ts',
  ],
  timeoutMS: 20_000,
});
