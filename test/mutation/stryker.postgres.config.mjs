// Mutation testing of the PostgreSQL store: `npm run test:mutation -- postgres`. It needs a
// database like the suite does (TEST_DATABASE_URL, else Docker, else embedded PostgreSQL).
// docs/MUTATION.md has the last result and what the survivors mean.
/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  testRunner: 'vitest',
  vitest: { configFile: 'test/mutation/vitest.postgres.config.ts' },
  mutate: [
    'src/postgres/postgres-task-store.ts',
    'src/postgres/input-requests.ts',
    'src/postgres/retention.ts',
    'src/postgres/store-calls.ts',
    'src/postgres/task-gate.ts',
    'src/postgres/task-rows.ts',
    'src/postgres/task-statements.ts',
    'src/postgres/task-watcher.ts',
    'src/postgres/task-changes.ts',
    'src/postgres/reaper.ts',
  ],
  coverageAnalysis: 'perTest',
  concurrency: 2,
  timeoutMS: 20_000,
  reporters: ['clear-text', 'html', 'json', 'progress'],
  htmlReporter: { fileName: '.scratch/mutation/postgres.html' },
  jsonReporter: { fileName: '.scratch/mutation/postgres.json' },
  tempDirName: '.stryker-tmp/postgres',
  incremental: false,
  thresholds: { high: 90, low: 80, break: null },
};
