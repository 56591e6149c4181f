// Mutation testing of the PostgreSQL reaper: `npm run test:mutation -- --only=postgres-reaper`.
// Needs a database, as postgres-store.
import { strykerTarget } from './stryker-target.mjs';

export default strykerTarget('postgres-reaper', {
  tests: 'postgres',
  mutate: ['src/postgres/reaper.ts'],
  timeoutMS: 20_000,
});
