import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// The tests that exercise the contract and the memory store without a database: what the
// memory mutation run (stryker.memory.config.mjs) runs against each mutant.
export default defineConfig({
  // The repository root, in Stryker's sandbox copy as in the checkout.
  root: fileURLToPath(new URL('../..', import.meta.url)),
  test: {
    include: ['test/memory-store.test.ts', 'test/deadline-queue.test.ts', 'test/contract/**/*.test.ts'],
    testTimeout: 30_000,
  },
});
