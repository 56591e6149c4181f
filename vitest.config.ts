import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // One PostgreSQL server for the run; each file creates its own database on it.
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // A process per worker (Vitest's default, stated on purpose): a file that crashes or leaks
    // sockets and timers cannot disturb the others.
    pool: 'forks',
    fileParallelism: true,
    // Database tests mostly wait on PostgreSQL, so even 2 cores can run 2 files at once (Vitest
    // would pick 1 there). The cap spares the server, which shares the cores, and its connections.
    maxWorkers: Math.min(4, Math.max(2, availableParallelism())),
  },
});
