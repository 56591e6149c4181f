import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// The PostgreSQL store's own tests: what the PostgreSQL mutation runs (stryker.postgres-*.config.mjs)
// run against each mutant. Fault-injection tests are left out: they take seconds each, and what
// they cover (pool, listener) is not mutated. So is the history cookbook: it drives the store in a
// beforeAll, which Stryker counts as coverage by no test in particular, so that every mutant it
// touches would run every test; what it checks is the SQL users write over the history, which
// postgres-history*.test.ts checks the store writes.
export default defineConfig({
  // The repository root, in Stryker's sandbox copy as in the checkout.
  root: fileURLToPath(new URL('../..', import.meta.url)),
  test: {
    include: ['test/postgres-*.test.ts', 'test/store-leaks.test.ts'],
    exclude: ['test/postgres-history-cookbook.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
