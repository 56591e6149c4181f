/**
 * pg_terminate_backend on every connection of two store instances, over and over, while eight
 * lifecycles run on them: the process survives, callers see only `backend` errors, nothing is lost
 * or applied twice, and the stores recover by themselves.
 */
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { migrate, PostgresTaskStore, type PostgresTaskStoreOptions } from '../../src/index.js';
import { LISTENER_APPLICATION_NAME } from '../../src/postgres/listener.js';
import { listening } from '../support/postgres-stores.js';
import { useTestDatabase } from '../support/test-database.js';
import { eventually, within } from '../support/time.js';
import { useNoUnhandledErrors } from '../support/unhandled-errors.js';
import { connectionsByApplication, keepTerminating, useAdminPool, useClosedAfterEach } from './fault-tools.js';
import { Ledger } from './ledger.js';

useNoUnhandledErrors();
const database = useTestDatabase();
const admin = useAdminPool(database);
const opened = useClosedAfterEach();
let schemas = 0;

async function twoStores(options: (schema: string) => PostgresTaskStoreOptions): Promise<{ schema: string; stores: PostgresTaskStore[] }> {
  const schema = `terminated_${++schemas}`;
  await migrate({ pool: admin.pool, schema });
  const stores = [new PostgresTaskStore(options(schema)), new PostgresTaskStore(options(schema))];
  opened.push(...stores);
  await Promise.all(stores.map((store) => within('the listener', listening(store))));
  return { schema, stores };
}

async function survivesTermination(schema: string, stores: PostgresTaskStore[]): Promise<void> {
  const ledger = new Ledger({ stores });
  const terminating = keepTerminating(admin.pool, 15, 60);
  await ledger.runUntil(terminating, 8);
  expect(await terminating, 'backends terminated').toBeGreaterThan(0);
  expect(ledger.backendErrors, 'callers saw the faults, as backend errors').toBeGreaterThan(0);
  await ledger.verify(admin.pool, schema);

  // Recovered: the listeners are back, one each, and a clean run sees no error at all.
  await Promise.all(stores.map((store) => within('the listener after the faults', listening(store))));
  await eventually('one listener connection per store', async () => (await connectionsByApplication(admin.pool))[LISTENER_APPLICATION_NAME] === 2);
  const after = new Ledger({ stores });
  await after.runCount(20, 4);
  expect(after.backendErrors, 'errors after the faults ended').toBe(0);
  await after.verify(admin.pool, schema);
}

describe('backends terminated under load', () => {
  it('stores that own their pools survive, lose nothing and apply nothing twice', async () => {
    const { schema, stores } = await twoStores((schema) => ({
      connectionString: database.connectionString,
      schema,
      reaper: { intervalMs: 50 },
    }));
    await survivesTermination(schema, stores);
  });

  it("stores on the caller's pools, which listen for 'error' themselves, survive alike", async () => {
    const pools = [0, 1].map(() => {
      const pool = new pg.Pool({ connectionString: database.connectionString, max: 10 });
      pool.on('error', () => {}); // what a careful caller does: log and carry on
      opened.push({ close: () => pool.end() });
      return pool;
    });
    let next = 0;
    const { schema, stores } = await twoStores((schema) => ({ pool: pools[next++ % 2], schema, reaper: { intervalMs: 50 } }));
    await survivesTermination(schema, stores);
  });
});
