/**
 * An exhausted pool: far more concurrent calls and waiters than connections, and a caller who
 * holds every connection of the pool it lent the store. Calls queue or fail with `backend`;
 * nothing is lost or applied twice, and the store carries on once connections are free.
 */
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { migrate, PostgresTaskStore } from '../../src/index.js';
import { LISTENER_APPLICATION_NAME } from '../../src/postgres/listener.js';
import { listening } from '../support/postgres-stores.js';
import { tableContents } from '../support/table-contents.js';
import { useTestDatabase } from '../support/test-database.js';
import { BOUND_MS, within } from '../support/time.js';
import { useNoUnhandledErrors } from '../support/unhandled-errors.js';
import { connectionsByApplication, useAdminPool, useClosedAfterEach } from './fault-tools.js';
import { Ledger } from './ledger.js';

useNoUnhandledErrors();
const database = useTestDatabase();
const admin = useAdminPool(database);
const opened = useClosedAfterEach();
let schemas = 0;

async function storeOnPool(pool: pg.Pool): Promise<{ schema: string; store: PostgresTaskStore }> {
  const schema = `exhausted_${++schemas}`;
  await migrate({ pool: admin.pool, schema });
  const store = new PostgresTaskStore({ pool, schema, reaper: false });
  opened.push(store);
  await within('the listener', listening(store));
  return { schema, store };
}

function callerPool(options: pg.PoolConfig): pg.Pool {
  const pool = new pg.Pool({ connectionString: database.connectionString, application_name: 'caller', ...options });
  pool.on('error', () => {});
  opened.push({ close: () => pool.end() });
  return pool;
}

describe('an exhausted pool', () => {
  it('a pool of 2 serves 100 concurrent lifecycles and 200 more waiters: all finish, none twice', async () => {
    const pool = callerPool({ max: 2 });
    const { schema, store } = await storeOnPool(pool);
    const extra = await Promise.all(Array.from({ length: 200 }, () => store.createTask({ toolName: 'waited' })));
    const waits = extra.map(({ taskId }) => store.waitForCompletion(taskId));
    waits.forEach((wait) => wait.catch(() => {})); // awaited below

    const ledger = new Ledger({ stores: [store] });
    let peak = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        peak = Math.max(peak, (await connectionsByApplication(admin.pool)).caller ?? 0);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();
    await within('100 lifecycles on 2 connections', ledger.runCount(100, 100), 60_000);
    await Promise.all(extra.map(({ taskId }) => store.completeTask(taskId, { content: [] })));
    const snapshots = await within('200 waiters', Promise.all(waits), 30_000);
    sampling = false;
    await sampler;

    expect(snapshots.every((snapshot) => snapshot?.task.status === 'completed')).toBe(true);
    expect(ledger.backendErrors).toBe(0);
    expect(ledger.completed).toBe(100);
    await ledger.verify(admin.pool, schema);
    expect(peak, 'connections of the pool in use at once').toBeLessThanOrEqual(2);
    // The listener is a connection of its own, never one of the pool's.
    expect((await connectionsByApplication(admin.pool))[LISTENER_APPLICATION_NAME]).toBe(1);
  }, 120_000);

  it('while the caller holds every connection, calls fail with backend after the pool timeout and change nothing; then all is well', async () => {
    const pool = callerPool({ max: 2, connectionTimeoutMillis: 500 });
    const { schema, store } = await storeOnPool(pool);
    const { taskId } = await store.createTask({ toolName: 'held out' });
    const before = await tableContents(admin.pool, schema);

    const held = await Promise.all([pool.connect(), pool.connect()]);
    try {
      for (const [what, call] of [
        ['createTask', () => store.createTask({ toolName: 'no connection' })],
        ['getTask', () => store.getTask(taskId)],
        ['requireInput', () => store.requireInput(taskId, { q: { method: 'roots/list' } })],
        ['completeTask', () => store.completeTask(taskId, { content: [] })],
        ['cancelTask', () => store.cancelTask(taskId)],
        ['waitForCompletion', () => store.waitForCompletion(taskId)],
      ] as const) {
        const failure = await within(what, (call as () => Promise<unknown>)().then(() => null, (error: unknown) => error), BOUND_MS);
        expect(failure, what).toMatchObject({ name: 'TaskStoreError', kind: 'backend' });
      }
    } finally {
      for (const client of held) client.release();
    }
    expect(await tableContents(admin.pool, schema), 'nothing was applied').toStrictEqual(before);

    const waiting = store.waitForCompletion(taskId);
    expect(await store.completeTask(taskId, { content: [] })).toBe(true);
    expect((await within('the waiter', waiting))?.task.status).toBe('completed');
    // One lifecycle at a time needs no more than the pool's two connections, so nothing queues
    // long enough to meet the pool's timeout.
    const ledger = new Ledger({ stores: [store] });
    await ledger.runCount(10, 1);
    expect(ledger.completed).toBe(10);
    await ledger.verify(admin.pool, schema);
  });
});
