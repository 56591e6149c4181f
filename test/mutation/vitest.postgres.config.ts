import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// The PostgreSQL store's own tests: what the PostgreSQL mutation runs (stryker.postgres-*.config.mjs)
// run against each mutant. Fault-injection tests are left out: they take seconds each, and what
// they cover (pool, listener) is not mutated.
export default defineConfig({
  // The repository root, in Stryker's sandbox copy as in the checkout.
  root: fileURLToPath(new URL('../..', import.meta.url)),
  test: {
    include: ['test/postgres-*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
