// Mutation testing of the PostgreSQL store's calls: `npm run test:mutation -- --only=postgres-store`.
// It needs a database like the suite does (TEST_DATABASE_URL, else Docker, else embedded
// PostgreSQL). The PostgreSQL store is four targets (this, postgres-statements, postgres-watch,
// postgres-reaper) so that each run is short enough to finish and record its table;
// docs/MUTATION.md has the results.
import { strykerTarget } from './stryker-target.mjs';

export default strykerTarget('postgres-store', {
  tests: 'postgres',
  mutate: ['src/postgres/postgres-task-store.ts', 'src/postgres/input-requests.ts', 'src/postgres/store-calls.ts'],
  // Each mutant's tests wait on PostgreSQL.
  timeoutMS: 20_000,
});
