// Mutation testing of the PostgreSQL store's calls: `npm run test:mutation -- --only=postgres-store`.
// It needs a database like the suite does (TEST_DATABASE_URL, else Docker, else embedded
// PostgreSQL). The PostgreSQL store is four targets (this, postgres-statements, postgres-watch,
// postgres-reaper) so that each run is short enough to finish and record its table;
// docs/MUTATION.md has the results and lists every survivor.
//
// Survivors that are equivalent, by reading:
// - The size checks of a null message (input-requests.ts `message !== null`, setStatus's
//   `parsed.message === null`): null is 4 bytes of JSON, under any maxPayloadBytes that admits a
//   request at all, and setStatus stores `parsed.message`, not what it measured.
// - A spent input-request key (`row.state === 'outstanding'` and the `{ state: 'spent' }` it
//   builds): a spent key carries no request, so asking it again is refused either way.
// - Recording answers when none was accepted: an UPDATE over an empty set of answers matches no row.
// - store-calls.ts `explained`: reading the schema's version after any driver error, not only one
//   a schema mismatch would explain, or taking a failed read as `undefined` rather than `null`:
//   the version reads as current, and the error thrown is the same (one statement more).
// - store-calls.ts `failure`: the `kind === 'backend'` test made true: only a backend error ever
//   carries a cause (the driver's error, or the lock timeout's), so the cause alone decides.
import { strykerTarget } from './stryker-target.mjs';

export default strykerTarget('postgres-store', {
  tests: 'postgres',
  mutate: ['src/postgres/postgres-task-store.ts', 'src/postgres/input-requests.ts', 'src/postgres/store-calls.ts'],
  // Each mutant's tests wait on PostgreSQL.
  timeoutMS: 20_000,
});
