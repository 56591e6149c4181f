/**
 * The listener connection terminated again and again while 40 waiters and 40 tokens depend on it
 * and another instance settles and cancels their tasks in the meantime. Notifications sent while
 * it is down are lost; the re-check after each reconnect and the poll meanwhile must make up for
 * every one of them.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { migrate, PostgresTaskStore, type ListenerStateChange } from '../../src/index.js';
import { LISTENER_APPLICATION_NAME } from '../../src/postgres/listener.js';
import { listening } from '../support/postgres-stores.js';
import { useTestDatabase } from '../support/test-database.js';
import { eventually, sleep, within } from '../support/time.js';
import { useNoUnhandledErrors } from '../support/unhandled-errors.js';
import { connectionsByApplication, keepTerminating, useAdminPool } from './fault-tools.js';

useNoUnhandledErrors();
const database = useTestDatabase();
const admin = useAdminPool(database);
const opened: PostgresTaskStore[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((store) => store.close()));
});

describe('the listener killed under load', () => {
  it('every waiter gets its outcome and every cancelled task its token; nothing else is raised', async () => {
    const schema = 'listener_killed';
    await migrate({ pool: admin.pool, schema });
    const options = { connectionString: database.connectionString, schema, reaper: false } as const;
    const watching = new PostgresTaskStore(options);
    const settling = new PostgresTaskStore({ ...options, listen: false });
    opened.push(watching, settling);
    await within('the listener', listening(watching));
    const reconnects: ListenerStateChange[] = [];
    watching.onListenerStateChange((change) => change.state === 'reconnecting' && reconnects.push(change));

    const tasks = await Promise.all(Array.from({ length: 40 }, () => watching.createTask({ toolName: 'watched', ttlMs: 3_600_000 })));
    const waits = tasks.map(({ taskId }) => watching.waitForCompletion(taskId));
    waits.forEach((wait) => wait.catch(() => {})); // awaited below

    // Settle a task, or cancel it (every third), every few milliseconds while the listener is killed.
    const killing = keepTerminating(admin.pool, 10, 80, 'listener');
    for (const [index, { taskId }] of tasks.entries()) {
      if (index % 3 === 0) expect((await settling.cancelTask(taskId, 'stop'))?.status).toBe('cancelled');
      else expect(await settling.completeTask(taskId, { content: [{ type: 'text', text: String(index) }] })).toBe(true);
      await sleep(15);
    }
    expect(await killing, 'listener connections terminated').toBeGreaterThan(0);

    const snapshots = await within('every waiter', Promise.all(waits), 10_000);
    for (const [index, snapshot] of snapshots.entries()) {
      if (index % 3 === 0) expect(snapshot?.task.status, `task ${index}`).toBe('cancelled');
      else expect(snapshot?.result, `task ${index}`).toStrictEqual({ content: [{ type: 'text', text: String(index) }] });
    }
    const cancelled = tasks.filter((_, index) => index % 3 === 0);
    await within('every cancelled task’s token', Promise.all(cancelled.map(({ token }) => token.whenCancelled())), 10_000);
    expect(tasks.filter(({ token }, index) => index % 3 !== 0 && token.isCancelled), 'tokens of completed tasks').toHaveLength(0);

    expect(reconnects.length, 'the listener noticed').toBeGreaterThan(0);
    await within('the listener back', listening(watching), 10_000);
    await eventually('exactly one listener connection', async () => (await connectionsByApplication(admin.pool))[LISTENER_APPLICATION_NAME] === 1);
    // And it still works afterwards.
    const late = await watching.createTask({ toolName: 'after' });
    const lateWait = watching.waitForCompletion(late.taskId);
    await settling.completeTask(late.taskId, { content: [] });
    expect((await within('a waiter after the faults', lateWait))?.task.status).toBe('completed');
  });
});
