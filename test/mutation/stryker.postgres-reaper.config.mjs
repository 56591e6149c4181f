// Mutation testing of the PostgreSQL reaper: `npm run test:mutation -- --only=postgres-reaper`.
// Needs a database, as postgres-store.
//
// Equivalent mutants that survive (no behaviour differs, so no test can tell them apart):
// - the constructor's `options === false ? {} : options` made always `false` or `=== true`: reading
//   a setting off `false` gives undefined, as off `{}`, so the defaults apply either way;
// - `stop()`'s `if (this.timer)` made `true`: clearTimeout(null) does nothing;
// - the `?? ''` of a batch error's missing code made another string: an error that is not a
//   timeout ends the pass whatever stands in for its code.
import { strykerTarget } from './stryker-target.mjs';

export default strykerTarget('postgres-reaper', {
  tests: 'postgres',
  mutate: ['src/postgres/reaper.ts'],
  timeoutMS: 20_000,
});
