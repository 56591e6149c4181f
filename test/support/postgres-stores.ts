/**
 * PostgresTaskStore instances for tests that need several of them on one schema, each on its own
 * pool, as separate server instances would be. Everything opened is closed after each test.
 */
import pg from 'pg';
import { afterEach } from 'vitest';
import { migrate, PostgresTaskStore, type PostgresTaskStoreOptions } from '../../src/index.js';
import { useTestDatabase } from './test-database.js';

export interface StoreFactory {
  /** The test database's URL. */
  readonly connectionString: string;
  /** A fresh migrated schema for the current test. */
  schema(): Promise<string>;
  /** A store on `schema` with a pool of its own. The reaper is off unless options say otherwise. */
  open(schema: string, options?: Omit<PostgresTaskStoreOptions, 'schema' | 'pool' | 'connectionString'>): PostgresTaskStore;
  /** A pool closed after the test, for reading the tables directly. */
  pool(): pg.Pool;
}

export function usePostgresStores(): StoreFactory {
  const database = useTestDatabase();
  const stores: PostgresTaskStore[] = [];
  const pools: pg.Pool[] = [];
  let schemas = 0;

  afterEach(async () => {
    await Promise.all(stores.splice(0).map((store) => store.close()));
    await Promise.all(pools.splice(0).map((pool) => pool.end()));
  });

  const pool = () => {
    const created = new pg.Pool({ connectionString: database.connectionString, max: 10 });
    pools.push(created);
    return created;
  };

  return {
    get connectionString() {
      return database.connectionString;
    },
    async schema() {
      const name = `s${++schemas}_${process.pid}`;
      await migrate({ connectionString: database.connectionString, schema: name });
      return name;
    },
    open(schema, options = {}) {
      const store = new PostgresTaskStore({ reaper: false, ...options, schema, pool: pool() });
      stores.push(store);
      return store;
    },
    pool,
  };
}

/** Resolves when the store's listener reports `listening`. */
export function listening(store: PostgresTaskStore): Promise<void> {
  return new Promise((resolve) => {
    if (store.listenerState === 'listening') return resolve();
    const stop = store.onListenerStateChange(({ state }) => {
      if (state === 'listening') {
        stop();
        resolve();
      }
    });
  });
}
