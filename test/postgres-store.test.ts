import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import pg from 'pg';
import { createPool } from '../src/postgres/pool.js';
import { afterAll, beforeAll } from 'vitest';
import { PostgresTaskStore } from '../src/index.js';
import { MIGRATIONS_DIRECTORY, renderMigration } from '../src/postgres/migration-files.js';
import { runTaskStoreConformance } from './conformance/task-store-conformance.js';
import { useTestDatabase } from './support/test-database.js';

const database = useTestDatabase();
let pool: pg.Pool;
let schemas = 0;
let migrationSql: string[];

beforeAll(async () => {
  pool = createPool(database.connectionString, 20);
  const files = (await readdir(MIGRATIONS_DIRECTORY)).filter((file) => file.endsWith('.sql')).sort();
  migrationSql = await Promise.all(files.map((file) => readFile(join(MIGRATIONS_DIRECTORY, file), 'utf8')));
});
afterAll(async () => {
  await pool.end();
});

runTaskStoreConformance({
  name: 'PostgresTaskStore',
  capabilities: { changeFeed: true },
  // A fresh schema per store: every test starts from empty tables. The migration files run
  // directly, without the migrator's bookkeeping, which test/postgres-migrations.test.ts covers.
  createStore: async ({ defaultTtlMs, limits, tombstoneRetentionMs, leases } = {}) => {
    const schema = `conformance_${++schemas}`;
    for (const source of migrationSql) await pool.query(renderMigration(source, schema));
    const store = new PostgresTaskStore({
      pool,
      schema,
      defaultTtlMs,
      limits,
      leases,
      reaper: { intervalMs: 3_600_000, tombstoneRetentionMs, batchSize: 100 },
    });
    // The suite drives cleanup passes itself: let the start-up pass finish first.
    await new Promise((resolve) => store.onReaperPass(resolve));
    return store;
  },
});
