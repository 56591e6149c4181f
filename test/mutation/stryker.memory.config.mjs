// Mutation testing of the contract and the memory store: `npm run test:mutation -- --only=memory`.
// docs/MUTATION.md has the last result and what the survivors mean.
import { strykerTarget } from './stryker-target.mjs';

export default strykerTarget('memory', {
  mutate: ['src/contract/**/*.ts', 'src/memory/**/*.ts', '!src/**/index.ts'],
  timeoutMS: 10_000,
});
