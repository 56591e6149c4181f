import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import { migrate, PostgresTaskStore } from '../src/index.js';
import { runTaskStoreConformance } from './conformance/task-store-conformance.js';
import { useTestDatabase } from './support/test-database.js';

const database = useTestDatabase();
let pool: pg.Pool;
let schemas = 0;

beforeAll(() => {
  pool = new pg.Pool({ connectionString: database.connectionString, max: 20 });
});
afterAll(async () => {
  await pool.end();
});

runTaskStoreConformance({
  name: 'PostgresTaskStore',
  // A fresh schema per store: every test starts from empty tables.
  createStore: async ({ defaultTtlMs, limits, tombstoneRetentionMs } = {}) => {
    const schema = `conformance_${++schemas}`;
    await migrate({ pool, schema });
    const store = new PostgresTaskStore({
      pool,
      schema,
      defaultTtlMs,
      limits,
      reaper: { intervalMs: 3_600_000, tombstoneRetentionMs, batchSize: 100 },
    });
    // The suite drives cleanup passes itself: let the start-up pass finish first.
    await new Promise((resolve) => store.onReaperPass(resolve));
    return store;
  },
});
