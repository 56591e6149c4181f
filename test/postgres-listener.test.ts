/**
 * The listener under failure: a killed connection, thousands of waiters on one connection, a
 * listener that cannot connect at all, notifications the store did not send, and poll-only mode.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import type { ListenerStateChange } from '../src/index.js';
import { LISTENER_APPLICATION_NAME } from '../src/postgres/listener.js';
import { notificationChannel } from '../src/postgres/schema-name.js';
import { raised, resultText, within } from './conformance/harness.js';
import { listening, usePostgresStores } from './support/postgres-stores.js';
import { eventually, stillPending } from './support/time.js';

const stores = usePostgresStores();

async function listenerPids(): Promise<number[]> {
  const { rows } = await stores
    .pool()
    .query<{ pid: number }>(
      'SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1',
      [LISTENER_APPLICATION_NAME],
    );
  return rows.map((row) => row.pid);
}

describe('the listener', () => {
  it('survives pg_terminate_backend: a pending waiter still resolves, and a later cancel still raises the token', async () => {
    const schema = await stores.schema();
    const a = stores.open(schema);
    const b = stores.open(schema, { listen: false });
    await listening(a);
    const changes: ListenerStateChange['state'][] = [];
    a.onListenerStateChange(({ state }) => changes.push(state));

    const awaited = await a.createTask({ toolName: 'build' });
    const held = await a.createTask({ toolName: 'build' });
    const waiting = a.waitForCompletion(awaited.taskId);
    await new Promise((resolve) => setTimeout(resolve, 50));

    const [pid] = await listenerPids();
    expect(pid).toBeDefined();
    await stores.pool().query('SELECT pg_terminate_backend($1)', [pid]);
    // Settle the task at once, likely before the listener is back: the re-check after the
    // reconnect, or the backstop poll, must find it.
    expect(await b.completeTask(awaited.taskId, resultText('done'))).toBe(true);
    expect((await within('the waiter after the listener was killed', waiting))?.task.status).toBe('completed');

    await within('the listener listening again', listening(a));
    expect(changes).toContain('reconnecting');
    await b.cancelTask(held.taskId);
    await raised(held.token, 'the token after a cancel once the listener was back');
    expect(await listenerPids()).toHaveLength(1);
  });

  it('holds 5,000 pending waiters on one listener connection and wakes every one', async () => {
    const schema = await stores.schema();
    const a = stores.open(schema);
    await listening(a);
    const admin = stores.pool();
    const { rows } = await admin.query<{ task_id: string }>(
      `INSERT INTO ${schema}.tasks (task_id, tool_name, arguments, status, status_message, created_at, last_updated_at, ttl_ms, expires_at)
       SELECT md5(i::text || random()::text), 'bulk', 'null', 'working', 'Task started', now(), now(), 600000, now() + interval '10 minutes'
         FROM generate_series(1, 5000) AS i
       RETURNING task_id`,
    );
    const waits = rows.map(({ task_id }) => a.waitForCompletion(task_id));
    // Every waiter has asked to be notified once every row is marked awaited.
    await within(
      'every waiter registering',
      (async () => {
        for (;;) {
          const { rows: marked } = await admin.query(`SELECT count(*)::int AS n FROM ${schema}.tasks WHERE awaited`);
          if (marked[0].n === 5000) return;
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      })(),
      20_000,
    );
    expect(await listenerPids()).toHaveLength(1);
    const { rows: connections } = await admin.query(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`,
    );
    // The listener, the store's pool (at most 10) and the admin pool: waiters hold no connection.
    expect(connections[0].n).toBeLessThanOrEqual(1 + 10 + 10);

    await admin.query(
      `UPDATE ${schema}.tasks SET status = 'completed', status_message = 'Task completed', result = '{"content": []}', last_updated_at = now()`,
    );
    const snapshots = await within('5,000 waiters waking', Promise.all(waits), 20_000);
    expect(snapshots.every((snapshot) => snapshot?.task.status === 'completed')).toBe(true);
  });

  it('keeps waiters correct by polling while the listener cannot connect', async () => {
    const schema = await stores.schema();
    const changes: ListenerStateChange[] = [];
    const a = stores.open(schema, { listen: { connectionString: 'postgres://nobody:secret@127.0.0.1:1/none' } });
    a.onListenerStateChange((change) => changes.push(change));
    const b = stores.open(schema, { listen: false });

    const { taskId } = await a.createTask({ toolName: 'build' });
    const waiting = a.waitForCompletion(taskId);
    await b.completeTask(taskId, resultText('done'));
    expect((await within('the waiter, by polling', waiting))?.task.status).toBe('completed');
    const retry = changes.find((change) => change.state === 'reconnecting');
    expect(retry?.error).toBeInstanceOf(Error);
    expect(retry?.retryInMs).toBeGreaterThanOrEqual(0);
    expect(String(retry?.error?.message)).not.toContain('secret');
  });

  it('in poll-only mode, waits and tokens still cross instances', async () => {
    const schema = await stores.schema();
    const a = stores.open(schema, { listen: false });
    const b = stores.open(schema, { listen: false });
    expect(a.listenerState).toBe('disabled');
    // There is no listener to observe: subscribing is harmless, and nothing is ever told.
    const told: unknown[] = [];
    const unsubscribe = a.onListenerStateChange((change) => told.push(change));
    expect(await listenerPids()).toHaveLength(0);

    const settled = await a.createTask({ toolName: 'build' });
    const cancelled = await a.createTask({ toolName: 'build' });
    const waiting = b.waitForCompletion(settled.taskId);
    // b holds no token for the task: only the poll of its wait can find the completion.
    expect(await stillPending(waiting, 200)).toBe(true);
    await a.completeTask(settled.taskId, resultText('done'));
    expect((await within('the poll-only waiter', waiting))?.task.status).toBe('completed');
    await b.cancelTask(cancelled.taskId);
    await raised(cancelled.token, 'the token, by polling');
    unsubscribe();
    expect(told).toEqual([]);
  });

  it('takes a notification on its channel for a hint, never the news: odd payloads and a forged cancel change nothing', async () => {
    const schema = await stores.schema();
    const a = stores.open(schema);
    const b = stores.open(schema, { listen: false });
    await listening(a);
    const held = await a.createTask({ toolName: 'build' });
    const awaited = await a.createTask({ toolName: 'build' });
    const waiting = a.waitForCompletion(awaited.taskId);
    const reported: string[] = [];
    const watch = await a.watchTasks([held.taskId], (taskId) => reported.push(taskId));
    // Any role that can connect can NOTIFY on the channel, with any payload.
    const channel = notificationChannel(schema);
    for (const payload of ['', 'garbage', 'cancelled', ':', `unknown:${held.taskId}`, `cancelled:${held.taskId}`, `status:${awaited.taskId}`]) {
      await stores.pool().query('SELECT pg_notify($1, $2)', [channel, payload]);
    }
    expect(await stillPending(waiting, 300)).toBe(true);
    expect(held.token.isCancelled).toBe(false);
    expect((await a.getTask(held.taskId))?.status).toBe('working');

    // The store still hears what really happens.
    reported.splice(0);
    await b.cancelTask(held.taskId);
    await raised(held.token, 'the token, on a real cancel');
    await eventually('the watch told of the real cancel', async () => reported.includes(held.taskId));
    await b.completeTask(awaited.taskId, resultText('done'));
    expect((await within('the waiter, on a real completion', waiting))?.task.status).toBe('completed');
    watch.close();
  });

  it('listens on its own connection string when given one', async () => {
    const schema = await stores.schema();
    const a = stores.open(schema, { listen: { connectionString: stores.connectionString } });
    const b = stores.open(schema, { listen: false });
    await within('the listener', listening(a));
    const { taskId } = await a.createTask({ toolName: 'build' });
    const waiting = a.waitForCompletion(taskId);
    await b.completeTask(taskId, resultText('done'));
    expect((await within('the waiter', waiting))?.task.status).toBe('completed');
  });

  it('close() leaves nothing that keeps the process alive', async () => {
    const schema = await stores.schema();
    // The child reports how long it lived after close(); starting it (a TypeScript loader) may
    // take long on a loaded machine, and is not what this measures.
    const script = `
      import { PostgresTaskStore } from './src/index.ts';
      const store = new PostgresTaskStore({ connectionString: process.env.URL, schema: process.env.SCHEMA, reaper: { intervalMs: 60000 } });
      const { taskId } = await store.createTask({ toolName: 'exit', ttlMs: 3600000 });
      const waiting = store.waitForCompletion(taskId).catch((error) => console.log('wait:', error.kind));
      await new Promise((resolve) => setTimeout(resolve, 300));
      await store.close();
      await waiting;
      const closedAt = Date.now();
      process.on('exit', () => console.log('lived after close:', Date.now() - closedAt));
    `;
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', '--input-type=module', '-e', script],
      { env: { ...process.env, URL: stores.connectionString, SCHEMA: schema }, timeout: 90_000 },
    );
    const [wait, lived] = stdout.trim().split('\n');
    expect(wait).toBe('wait: backend');
    // A timer or socket left behind would hold the process for at least the reaper's 60 s.
    expect(Number(lived!.replace('lived after close: ', ''))).toBeLessThan(10_000);
  }, 120_000);
});
