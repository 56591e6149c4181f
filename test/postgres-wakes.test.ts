/**
 * Each way a PostgreSQL store learns that a task it watches has changed, shown on its own. A store
 * has several on purpose (its own calls, NOTIFY, a re-read once the listener is back, deadline
 * timers, the backstop poll), and with the default 1 s poll any one of them could break unseen:
 * the poll would cover for it. So these tests set `backstopPollMs` to an hour where they show
 * another path, and to 50 ms where they show the poll.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { ListenerStateChange } from '../src/index.js';
import { generateTaskId, PostgresTaskStore } from '../src/index.js';
import { raised, resultText, within } from './conformance/harness.js';
import { countCheckouts } from './support/pool-checkouts.js';
import { listening, usePostgresStores } from './support/postgres-stores.js';
import { useStoreRoles } from './support/store-roles.js';
import { useNoUnhandledErrors } from './support/unhandled-errors.js';
import { eventually, stillPending } from './support/time.js';

const HOUR_MS = 3_600_000;
const stores = usePostgresStores();
const storeRole = useStoreRoles(stores);
useNoUnhandledErrors();

/** Resolves once a wait has flagged the task awaited in the database. */
function flagged(schema: string, taskId: string): Promise<void> {
  return eventually('the wait flagging its task', async () => {
    const { rows } = await stores.pool().query(`SELECT awaited FROM ${schema}.tasks WHERE task_id = $1`, [taskId]);
    return rows[0].awaited === true;
  });
}

/** Resolves with the first state change `matches` accepts. */
function nextState(store: PostgresTaskStore, matches: (change: ListenerStateChange) => boolean): Promise<ListenerStateChange> {
  return new Promise((resolve) => {
    const stop = store.onListenerStateChange((change) => {
      if (!matches(change)) return;
      stop();
      resolve(change);
    });
  });
}

describe('the store’s own calls, in poll-only mode with the poll out of the way', () => {
  const open = async () => stores.open(await stores.schema(), { listen: false, backstopPollMs: HOUR_MS });

  it('a discard wakes the task’s waiter with null', async () => {
    const store = await open();
    const { taskId } = await store.createTask({ toolName: 'build' });
    const waiting = store.waitForCompletion(taskId);
    expect(await stillPending(waiting, 100)).toBe(true);
    expect(await store.discardTask(taskId)).toBe(true);
    expect(await within('the waiter of a discarded task', waiting)).toBeNull();
  });

  it('a cancel raises the token, and a TTL shortened into the past raises it as expired, by the time the call returns', async () => {
    const store = await open();
    const cancelled = await store.createTask({ toolName: 'build' });
    const shortened = await store.createTask({ toolName: 'build', ttlMs: HOUR_MS });
    await store.cancelTask(cancelled.taskId);
    expect(cancelled.token.isCancelled).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(await store.setTtl(shortened.taskId, 1)).toBe(true);
    expect(shortened.token.isCancelled).toBe(true);
    expect(shortened.token.signal.reason).toBe('expired');
  });

  it('a TTL brought forward raises the token at the new deadline, and wakes a waiter with null', async () => {
    const store = await open();
    const held = await store.createTask({ toolName: 'build', ttlMs: HOUR_MS });
    const waited = await store.createTask({ toolName: 'build', ttlMs: HOUR_MS });
    const waiting = store.waitForCompletion(waited.taskId);
    // The wait has read its task (and its hour-long deadline) before the TTL changes.
    expect(await stillPending(waiting, 200)).toBe(true);
    expect(await store.setTtl(held.taskId, 400)).toBe(true);
    expect(await store.setTtl(waited.taskId, 400)).toBe(true);
    expect(held.token.isCancelled).toBe(false);
    await raised(held.token, 'the token at the new deadline');
    expect(await within('the waiter at the new deadline', waiting)).toBeNull();
  });

  it('a completion, a failure and a cancel through this instance wake its waiters', async () => {
    const store = await open();
    const completed = await store.createTask({ toolName: 'build' });
    const failed = await store.createTask({ toolName: 'build' });
    const cancelled = await store.createTask({ toolName: 'build' });
    const waits = [completed, failed, cancelled].map(({ taskId }) => store.waitForCompletion(taskId));
    expect(await stillPending(Promise.race(waits), 200)).toBe(true);
    await store.completeTask(completed.taskId, resultText('done'));
    await store.failTask(failed.taskId, { code: -32603, message: 'broke' });
    await store.cancelTask(cancelled.taskId);
    const woken = await within('the waiters', Promise.all(waits));
    expect(woken.map((snapshot) => snapshot?.task.status)).toEqual(['completed', 'failed', 'cancelled']);
  });

  it('a watch hears this instance ask for input, settle, cancel a finished task, move a deadline and discard', async () => {
    const store = await open();
    const { taskId } = await store.createTask({ toolName: 'build', ttlMs: HOUR_MS });
    const reported: string[] = [];
    const watch = await store.watchTasks([taskId], (id) => reported.push(id));
    const heard = async (what: string, change: () => Promise<unknown>) => {
      reported.splice(0);
      await change();
      await eventually(what, async () => reported.includes(taskId));
    };
    await heard('the request for input', () => store.requireInput(taskId, { approve: { method: 'roots/list' } }));
    await heard('the task resuming', () => store.applyInputResponses(taskId, { approve: { roots: [] } }));
    await heard('a status set by hand', () => store.setStatus(taskId, 'input_required', 'waiting on a person'));
    await heard('the status set back', () => store.setStatus(taskId, 'working', 'carrying on'));
    await heard('the completion', () => store.completeTask(taskId, resultText('done')));
    await heard('the cancel request on the finished task', () => store.cancelTask(taskId));
    const { createdAt } = (await store.getTask(taskId))!;
    const ttlMs = Date.now() - Date.parse(createdAt) + 400;
    await heard('the TTL change', () => store.setTtl(taskId, ttlMs));
    reported.splice(0);
    // The watch's deadline moved with it: the new TTL elapsing is reported, an hour early.
    await eventually('the report at the new deadline', async () => reported.includes(taskId) && Date.now() >= Date.parse(createdAt) + ttlMs);
    watch.close();

    const discarded = (await store.createTask({ toolName: 'build' })).taskId;
    const never = generateTaskId();
    const watchingDiscard: string[] = [];
    const second = await store.watchTasks([discarded, never], (id) => watchingDiscard.push(id));
    expect(await store.discardTask(never)).toBe(false);
    expect(await store.discardTask(discarded)).toBe(true);
    await eventually('the discard', async () => watchingDiscard.includes(discarded));
    // An id that names no task is never reported, not even when a discard of it finds nothing.
    expect(watchingDiscard).toEqual([discarded]);
    second.close();
  });
});

describe('while notifications work', () => {
  it('waiters, tokens and watches of tasks nothing changes cost no query and hear nothing, however short the poll', async () => {
    const schema = await stores.schema();
    const pool = stores.pool();
    const store = new PostgresTaskStore({ pool, schema, reaper: false, backstopPollMs: 50 });
    try {
      await listening(store);
      const forever = await store.createTask({ toolName: 'build', ttlMs: null });
      const hourly = await store.createTask({ toolName: 'build', ttlMs: HOUR_MS });
      const waits = [store.waitForCompletion(forever.taskId), store.waitForCompletion(hourly.taskId)];
      const reported: string[] = [];
      const watch = await store.watchTasks([forever.taskId, hourly.taskId], (taskId) => reported.push(taskId));
      // The waits have flagged and read their tasks by now.
      expect(await stillPending(Promise.race(waits), 200)).toBe(true);

      const checkouts = countCheckouts(pool);
      expect(await stillPending(Promise.race(waits), 500)).toBe(true);
      expect({ checkouts: checkouts(), reported }).toEqual({ checkouts: 0, reported: [] });
      expect([forever.token.isCancelled, hourly.token.isCancelled]).toEqual([false, false]);
      watch.close();
    } finally {
      await store.close();
    }
  });
});

describe('waits on one task', () => {
  it('an aborted wait leaves the others on its task, and its token’s deadline, in place', async () => {
    const store = stores.open(await stores.schema(), { backstopPollMs: HOUR_MS });
    await listening(store);
    const { taskId, token } = await store.createTask({ toolName: 'build', ttlMs: 1000 });
    const caller = new AbortController();
    const aborted = store.waitForCompletion(taskId, { signal: caller.signal });
    const kept = store.waitForCompletion(taskId);
    expect(await stillPending(kept, 100)).toBe(true);
    caller.abort(new Error('the client went away'));
    await expect(aborted).rejects.toThrow('the client went away');
    // Nothing changes the task: only its deadline, armed here, can end the wait and raise the token.
    expect(await within('the remaining wait, at the deadline', kept)).toBeNull();
    await raised(token, 'the token at the deadline');
    expect(token.signal.reason).toBe('expired');
  });

  it('when flagging them fails, every wait begun together rejects with a backend error, and one aborted meanwhile stays as it was', async () => {
    const schema = await stores.schema();
    const role = await storeRole(schema);
    const store = new PostgresTaskStore({ connectionString: role.connectionString, schema, listen: false, reaper: false, backstopPollMs: HOUR_MS });
    try {
      const shared = await store.createTask({ toolName: 'build' });
      const alone = await store.createTask({ toolName: 'build' });
      await role.updates(false);
      const caller = new AbortController();
      const abandoned = store.waitForCompletion(alone.taskId, { signal: caller.signal }).catch((error: unknown) => error);
      caller.abort(new Error('the client went away'));
      const waits = [store.waitForCompletion(shared.taskId), store.waitForCompletion(shared.taskId)];
      for (const wait of waits) await expect(within('a wait whose flag failed', wait)).rejects.toMatchObject({ kind: 'backend' });
      expect(await abandoned).toBe(caller.signal.reason);
    } finally {
      await store.close();
    }
  });
});

describe('waits begun together', () => {
  it('are flagged and re-read in a few statements, not one per wait, and all wake on one completing statement', async () => {
    const schema = await stores.schema();
    const pool = stores.pool();
    const waiting = new PostgresTaskStore({ pool, schema, reaper: false, backstopPollMs: HOUR_MS });
    try {
      const creating = stores.open(schema, { listen: false });
      await listening(waiting);
      const ids: string[] = [];
      for (let i = 0; i < 200; i++) ids.push((await creating.createTask({ toolName: 'batch' })).taskId);
      const checkouts = countCheckouts(pool);
      const waits = ids.map((taskId) => waiting.waitForCompletion(taskId));
      await eventually('every wait flagging its task', async () => {
        const { rows } = await stores.pool().query(`SELECT count(*)::int AS n FROM ${schema}.tasks WHERE awaited`);
        return rows[0].n === ids.length;
      });
      expect(await stillPending(Promise.race(waits), 100)).toBe(true);
      await stores.pool().query(
        `UPDATE ${schema}.tasks SET status = 'completed', last_updated_at = now(), result = '{"content": []}' WHERE task_id = ANY($1)`,
        [ids],
      );
      const snapshots = await within('every waiter', Promise.all(waits));
      expect(snapshots.map((snapshot) => snapshot?.task.status)).toEqual(ids.map(() => 'completed'));
      // One flagging UPDATE and one re-read for the 200 waits, then the re-reads their NOTIFYs cause.
      expect(checkouts()).toBeLessThanOrEqual(20);
    } finally {
      await waiting.close();
    }
  });
});

describe('a listener that was away', () => {
  it('on its return, re-reads every watched task: a completion, a TTL change, a cancel and a reaping made meanwhile are all found', async () => {
    const schema = await stores.schema();
    const role = await storeRole(schema);
    const watching = stores.open(schema, { listen: { connectionString: role.connectionString }, backstopPollMs: HOUR_MS });
    const driving = stores.open(schema, { listen: false });
    await listening(watching);
    const completed = await watching.createTask({ toolName: 'build' });
    const shortened = await watching.createTask({ toolName: 'build', ttlMs: HOUR_MS });
    const cancelled = await watching.createTask({ toolName: 'build' });
    const reaped = await watching.createTask({ toolName: 'build', ttlMs: HOUR_MS });
    // A TTL counts from the task's creation.
    const newDeadline = Date.parse((await watching.getTask(shortened.taskId))!.createdAt) + 1500;
    const waiting = watching.waitForCompletion(completed.taskId);
    const reportedAt: number[] = [];
    const watch = await watching.watchTasks([shortened.taskId], () => reportedAt.push(Date.now()));
    await flagged(schema, completed.taskId);

    // Refused logins keep the listener away for as long as the test needs.
    await role.logins(false);
    const away = nextState(watching, ({ state }) => state === 'reconnecting');
    await role.terminateListener();
    await within('the listener noticing', away);
    expect(await driving.completeTask(completed.taskId, resultText('done'))).toBe(true);
    expect(await driving.setTtl(shortened.taskId, 1500)).toBe(true);
    await driving.cancelTask(cancelled.taskId);
    expect(await driving.setTtl(reaped.taskId, 0)).toBe(true);
    expect(await driving.reapExpired()).toEqual({ tombstoned: 1, purged: 0 });
    expect(await stillPending(waiting, 200)).toBe(true);
    expect(cancelled.token.isCancelled).toBe(false);
    expect(reportedAt, 'reports while the listener is away and the poll far off').toEqual([]);

    await role.logins(true);
    await within('the listener back', listening(watching), 15_000);
    expect((await within('the waiter, by the re-read', waiting))?.task.status).toBe('completed');
    await raised(cancelled.token, 'the token of the task cancelled meanwhile');
    await raised(reaped.token, 'the token of the task that expired and was reaped meanwhile');
    expect(reaped.token.signal.reason).toBe('expired');
    await eventually('the watch told on the listener’s return', async () => reportedAt.length > 0);
    // The watch's deadline was read again: the new TTL elapsing is reported, an hour early. (On a
    // slow machine the listener may return after that deadline, and its re-read is the report.)
    await raised(shortened.token, 'the token at the TTL set meanwhile');
    await eventually('the watch told of the new deadline', async () => reportedAt.some((at) => at >= newDeadline));
    watch.close();
  });

  it('while it is away, the poll wakes waiters, raises tokens and tells watches of another instance’s changes; once it is back, the poll stops', async () => {
    const schema = await stores.schema();
    const role = await storeRole(schema);
    const pool = stores.pool();
    const watching = new PostgresTaskStore({ pool, schema, reaper: false, backstopPollMs: 100, listen: { connectionString: role.connectionString } });
    try {
      const driving = stores.open(schema, { listen: false });
      await listening(watching);
      const completed = await watching.createTask({ toolName: 'build' });
      const cancelled = await watching.createTask({ toolName: 'build' });
      const asking = await watching.createTask({ toolName: 'build' });
      const waiting = watching.waitForCompletion(completed.taskId);
      const reported: string[] = [];
      const watch = await watching.watchTasks([asking.taskId], (taskId) => reported.push(taskId));

      await role.logins(false);
      const away = nextState(watching, ({ state }) => state === 'reconnecting');
      await role.terminateListener();
      await within('the listener noticing', away);
      expect(await driving.completeTask(completed.taskId, resultText('done'))).toBe(true);
      await driving.cancelTask(cancelled.taskId);
      await driving.requireInput(asking.taskId, { approve: { method: 'roots/list' } });
      expect((await within('the waiter, by the poll', waiting))?.task.status).toBe('completed');
      await raised(cancelled.token, 'the token, by the poll');
      await eventually('the watch, by the poll', async () => reported.includes(asking.taskId));
      expect(watching.listenerState).not.toBe('listening');

      await role.logins(true);
      await within('the listener back', listening(watching), 15_000);
      // What its return re-reads is done within a few ticks; from then on only NOTIFY wakes anyone.
      await new Promise((resolve) => setTimeout(resolve, 300));
      const checkouts = countCheckouts(pool);
      reported.splice(0);
      await new Promise((resolve) => setTimeout(resolve, 600));
      expect({ checkouts: checkouts(), reported }).toEqual({ checkouts: 0, reported: [] });
      expect(asking.token.isCancelled).toBe(false);
      watch.close();
    } finally {
      await watching.close();
    }
  });
  it('on its return, reads a watched deadline again until the read works: the watch is told at a TTL set meanwhile', async () => {
    const schema = await stores.schema();
    const role = await storeRole(schema);
    const watching = new PostgresTaskStore({ connectionString: role.connectionString, schema, reaper: false, backstopPollMs: 100 });
    try {
      const driving = stores.open(schema, { listen: false });
      await listening(watching);
      const { taskId } = await driving.createTask({ toolName: 'build', ttlMs: HOUR_MS });
      const reportedAt: number[] = [];
      const watch = await watching.watchTasks([taskId], () => reportedAt.push(Date.now()));

      await role.logins(false);
      const away = nextState(watching, ({ state }) => state === 'reconnecting');
      await role.terminateListener();
      await within('the listener noticing', away);
      // A TTL counts from the task's creation: this one ends about 4 s from now.
      const createdAt = Date.parse((await driving.getTask(taskId))!.createdAt);
      const ttlMs = Date.now() - createdAt + 4_000;
      expect(await driving.setTtl(taskId, ttlMs)).toBe(true);
      // The listener comes back to a deadline it cannot read, then can again.
      await role.reads(false);
      await role.logins(true);
      await within('the listener back', listening(watching), 15_000);
      await new Promise((resolve) => setTimeout(resolve, 300));
      await role.reads(true);
      reportedAt.splice(0);
      await eventually('the watch told of the new deadline', async () => reportedAt.some((at) => at >= createdAt + ttlMs), 8_000);
      watch.close();
    } finally {
      await watching.close();
    }
  });
});

describe('the backstop poll', () => {
  const watchingStores: PostgresTaskStore[] = [];
  afterEach(() => Promise.all(watchingStores.splice(0).map((store) => store.close())));

  /** A listening store whose reads the test can refuse, a wait on its task flagged, and a store to drive it. */
  async function flaggedWaitOnRole(backstopPollMs: number) {
    const schema = await stores.schema();
    const role = await storeRole(schema);
    const watching = new PostgresTaskStore({ connectionString: role.connectionString, schema, reaper: false, backstopPollMs });
    watchingStores.push(watching);
    const driving = stores.open(schema, { listen: false });
    await listening(watching);
    const { taskId } = await watching.createTask({ toolName: 'build' });
    const waiting = watching.waitForCompletion(taskId);
    await flagged(schema, taskId);
    return { role, watching, driving, taskId, waiting };
  }

  it('takes over while re-reads fail, though notifications still arrive, and wakes the waiter once they work again', async () => {
    const { role, watching, driving, taskId, waiting } = await flaggedWaitOnRole(50);
    // The NOTIFY of this completion arrives, and the re-read it causes fails.
    await role.reads(false);
    expect(await driving.completeTask(taskId, resultText('done'))).toBe(true);
    expect(await stillPending(waiting, 300)).toBe(true);
    expect(watching.listenerState).toBe('listening');
    // No notification will come again: only the poll can find the completion now.
    await role.reads(true);
    expect((await within('the waiter, by the poll', waiting))?.task.status).toBe('completed');
  });

  it('keeps polling for a task whose re-read failed, though a later re-read of another task works', async () => {
    const { role, watching, driving, taskId, waiting } = await flaggedWaitOnRole(1_000);
    const other = await watching.createTask({ toolName: 'build' });
    // The completion's re-read fails; then another task's re-read, prompted by its cancel, works.
    await role.reads(false);
    expect(await driving.completeTask(taskId, resultText('done'))).toBe(true);
    expect(await stillPending(waiting, 100)).toBe(true);
    await role.reads(true);
    await driving.cancelTask(other.taskId);
    await raised(other.token, 'the token of the other task, by its re-read');
    // That read said nothing of the completed task: the poll must still look at it.
    expect((await within('the waiter, by the poll', waiting))?.task.status).toBe('completed');
  });
});
