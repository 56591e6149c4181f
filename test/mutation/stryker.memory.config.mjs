// Mutation testing of the contract and the memory store: `npm run test:mutation -- --only=memory`.
// docs/MUTATION.md has the last result and what the survivors mean.
//
// Survivors that are equivalent mutants (no test can tell them from the original; left, not
// contorted around):
// - src/contract/listing.ts, CURSOR_TEXT: dropping `^` or `$` from the regex. decodeCursor accepts a
//   cursor only if encoding the parsed position gives back the same text, which rejects anything
//   before or after the two fields whatever the regex matched.
// - src/contract/timers.ts, siftUp: `<=` turned into `<`. Two deadlines of the same millisecond
//   change places in the heap, and both fire in the same fireDue call either way.
// - src/memory/task-table.ts, reapExpired and reclaimExpiredPayloads: `entry.kind === 'live' &&`
//   forced to `true &&`. A tombstone has no ttlMs, so its deadline is NaN and isExpiredAt is false.
import { strykerTarget } from './stryker-target.mjs';

export default strykerTarget('memory', {
  tests: 'memory',
  mutate: ['src/contract/**/*.ts', 'src/memory/**/*.ts', '!src/**/index.ts'],
  timeoutMS: 10_000,
});
