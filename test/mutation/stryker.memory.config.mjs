// Mutation testing of the contract and the memory store: `npm run test:mutation -- memory`.
// docs/MUTATION.md has the last result and what the survivors mean.
/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  testRunner: 'vitest',
  vitest: { configFile: 'test/mutation/vitest.memory.config.ts' },
  mutate: ['src/contract/**/*.ts', 'src/memory/**/*.ts', '!src/**/index.ts'],
  coverageAnalysis: 'perTest',
  concurrency: 2,
  timeoutMS: 10_000,
  reporters: ['clear-text', 'html', 'json', 'progress'],
  htmlReporter: { fileName: '.scratch/mutation/memory.html' },
  jsonReporter: { fileName: '.scratch/mutation/memory.json' },
  tempDirName: '.stryker-tmp/memory',
  incremental: false,
  thresholds: { high: 90, low: 80, break: null },
};
