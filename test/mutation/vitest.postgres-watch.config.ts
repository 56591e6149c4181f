import { defineConfig } from 'vitest/config';
import postgres from './vitest.postgres.config.js';

// What the postgres-watch mutation run (stryker.postgres-watch.config.mjs) runs against each
// mutant: the tests that wait, hold tokens, watch, or close a store that does. The others (history,
// schema, migrations, telemetry) exercise the watcher only on the side, many in a beforeAll, which
// makes Stryker run every test for a mutant they touch; none of them checks what the watcher does.
export default defineConfig({
  ...postgres,
  test: {
    ...postgres.test,
    include: [
      'test/postgres-store.test.ts',
      'test/postgres-listener.test.ts',
      'test/postgres-instances.test.ts',
      'test/postgres-task-changes.test.ts',
      'test/postgres-wakes.test.ts',
      'test/postgres-reaper.test.ts',
      'test/postgres-errors.test.ts',
      'test/postgres-watch-costs.test.ts',
      'test/postgres-statements.test.ts',
      'test/store-leaks.test.ts',
    ],
  },
});
