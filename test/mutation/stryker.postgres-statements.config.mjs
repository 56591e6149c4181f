// Mutation testing of the SQL the PostgreSQL store's calls run and what maps it: its statements,
// rows, payload encoding, the per-task gate and the dependents' deletes.
// `npm run test:mutation -- --only=postgres-statements`. Needs a database, as postgres-store.
//
// Survivors that are equivalent, by reading (docs/MUTATION.md lists every survivor):
// - task-gate.ts `run`: `error?.code` made `error.code`: what an operation throws is never null.
// - retention.ts `insert`: the advisory lock's name blanked. Every owner's quota check then takes
//   one lock rather than one per owner: creations of different owners wait for each other's
//   short check, and every count stays exact.
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
