/**
 * PostgresTaskStore instances for tests that need several of them on one schema, each on its own
 * pool, as separate server instances would be. Everything opened is closed after each test.
 */
import pg from 'pg';
import { createPool } from '../../src/postgres/pool.js';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { migrate, PostgresTaskStore, type PostgresTaskStoreOptions } from '../../src/index.js';
import { useTestDatabase } from './test-database.js';

export interface StoreFactory {
  /** The test database's URL. */
  readonly connectionString: string;
  /** A fresh migrated schema for the current test. */
  schema(): Promise<string>;
  /**
   * A store on `schema` with a pool of its own, or on `options.pool`. The reaper is off unless
   * options say otherwise.
   */
  open(schema: string, options?: Omit<PostgresTaskStoreOptions, 'schema' | 'connectionString'>): PostgresTaskStore;
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
    const created = createPool(database.connectionString, 10);
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
      const store = new PostgresTaskStore({ reaper: false, ...options, schema, pool: options.pool ?? pool() });
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

/**
 * A test file's shared admin pool, and what each test opens: stores pushed onto `stores`, and
 * clients from `client()` (outside every store, e.g. for holding locks), closed after the test.
 */
export function useTestResources(database: { readonly connectionString: string }): {
  readonly admin: pg.Pool;
  readonly stores: PostgresTaskStore[];
  client(): Promise<pg.Client>;
} {
  let admin: pg.Pool | undefined;
  const stores: PostgresTaskStore[] = [];
  const clients: pg.Client[] = [];
  beforeAll(() => {
    admin = createPool(database.connectionString, 10);
  });
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((client) => client.end().catch(() => {})));
    await Promise.all(stores.splice(0).map((store) => store.close()));
  });
  afterAll(async () => {
    await admin?.end();
  });
  return {
    get admin() {
      if (!admin) throw new Error('the admin pool exists once beforeAll has run');
      return admin;
    },
    stores,
    async client() {
      const client = new pg.Client({ connectionString: database.connectionString });
      clients.push(client);
      await client.connect();
      return client;
    },
  };
}
