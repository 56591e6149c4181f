/**
 * A closed store leaves nothing behind: no timer or socket it made is still alive, every waiter
 * has been answered, no listener stays on a caller's AbortSignal, and (PostgreSQL) no connection
 * it opened is left on the server. Each store is driven through everything that holds a resource
 * (deadlines, a moved deadline, waiters with and without a signal, a watch, an input request,
 * cancellation, automatic cleanup passes, for PostgreSQL the listener and the reaper), then closed.
 */
import { getEventListeners } from 'node:events';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryTaskStore } from '../src/memory/memory-task-store.js';
import type { TaskChangeFeed } from '../src/contract/task-changes.js';
import { migrate, PostgresTaskStore, type TaskStore } from '../src/index.js';
import { ROOTS } from './conformance/harness.js';
import { listening } from './support/postgres-stores.js';
import { trackResources } from './support/resource-tracker.js';
import { useTestDatabase } from './support/test-database.js';
import { eventually, within } from './support/time.js';

type Store = TaskStore & TaskChangeFeed;

/** Uses every part of `store` that holds a timer, a socket or a waiter, closes it, and returns what is left. */
async function closeAfterFullUse(open: () => Promise<Store>): Promise<{ signal: AbortSignal; waits: PromiseSettledResult<unknown>[] }> {
  const tracker = trackResources();
  try {
    const store = await open();
    const expiring = await store.createTask({ toolName: 'expiring', ttlMs: 60_000, owner: 'alice' });
    const forever = await store.createTask({ toolName: 'forever', ttlMs: null });
    const cancelled = await store.createTask({ toolName: 'cancelled', ttlMs: 30_000 });
    const soon = await store.createTask({ toolName: 'soon', ttlMs: 1 });
    expect(await store.setTtl(expiring.taskId, 120_000)).toBe(true);
    expect(await store.requireInput(forever.taskId, { roots: ROOTS })).toBe(true);
    await store.cancelTask(cancelled.taskId, 'not needed');
    const caller = new AbortController();
    const waits = Promise.allSettled([
      store.waitForCompletion(expiring.taskId),
      store.waitForCompletion(forever.taskId, { signal: caller.signal }),
      store.waitForCompletion(soon.taskId),
    ]);
    const watch = await store.watchTasks([expiring.taskId, forever.taskId], () => {});
    await store.listTasks({ owner: 'alice' });
    await store.close();
    tracker.stop();
    const settled = await within('every waiter answered after close()', waits);
    // Closing the store ends the watch: it is closed only after the check.
    await eventually('every timer and socket the store made destroyed', async () => tracker.alive().length === 0).catch(() => {
      throw new Error(`left alive after close():\n\n${tracker.alive().join('\n\n')}`);
    });
    watch.close();
    return { signal: caller.signal, waits: settled };
  } finally {
    tracker.dispose();
  }
}

function expectNothingLeft({ signal, waits }: { signal: AbortSignal; waits: PromiseSettledResult<unknown>[] }): void {
  expect(getEventListeners(signal, 'abort')).toHaveLength(0);
  expect(waits).toHaveLength(3);
}

describe('MemoryTaskStore after close()', () => {
  it('leaves no timer, waiter or signal listener behind', async () => {
    const left = await closeAfterFullUse(async () => new MemoryTaskStore({ tombstoneRetentionMs: 20 }));
    expectNothingLeft(left);
  });
});

describe('PostgresTaskStore after close()', () => {
  const database = useTestDatabase();
  let admin: pg.Pool;
  beforeAll(async () => {
    admin = new pg.Pool({ connectionString: database.connectionString, max: 1 });
    await migrate({ connectionString: database.connectionString, schema: 'leaks' });
  });
  afterAll(async () => {
    await admin.end();
  });

  /** Connections to the test database other than the admin's own. */
  async function otherConnections(): Promise<number> {
    const { rows } = await admin.query<{ count: number }>(
      'SELECT count(*)::int AS count FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()',
    );
    return rows[0]!.count;
  }

  it('leaves no timer, socket, waiter, signal listener or server connection behind, its listener and reaper included', async () => {
    expect(await otherConnections()).toBe(0);
    const left = await closeAfterFullUse(async () => {
      const store = new PostgresTaskStore({ connectionString: database.connectionString, schema: 'leaks', reaper: { intervalMs: 60_000 } });
      // The first pass starts at once and may end before the listener listens: observe it first.
      const firstPass = new Promise((resolve) => store.onReaperPass(resolve));
      await listening(store);
      await firstPass;
      return store;
    });
    expectNothingLeft(left);
    await eventually('the server seeing every connection of the store gone', async () => (await otherConnections()) === 0);
  });

  it('leaves the connections of a pool it was given open, and nothing else', async () => {
    // The pool's own sockets and idle timers are the caller's: open both connections first, and
    // keep them without idle timers, so whatever the run leaves alive is the store's.
    const pool = new pg.Pool({ connectionString: database.connectionString, max: 2, idleTimeoutMillis: 0 });
    try {
      const warm = await Promise.all([pool.connect(), pool.connect()]);
      for (const client of warm) client.release();
      const left = await closeAfterFullUse(async () => new PostgresTaskStore({ pool, schema: 'leaks', listen: false, reaper: false }));
      expectNothingLeft(left);
      expect(pool.totalCount).toBe(2);
      expect((await pool.query<{ one: number }>('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    } finally {
      await pool.end();
    }
  });
});
