/**
 * What a PostgreSQL store spends on the tasks it watches for its callers (waiters, tokens, watches):
 * one statement for a change it has to look at, none for a change a NOTIFY or its own call already
 * told it, and no timer once it watches nothing. A server holding thousands of pending tools pays
 * these per task and per change, so an extra re-read or a leftover timer is a cost users would
 * see, even though every answer stays right.
 *
 * Statements are counted as connections checked out of the store's pool: each statement outside a
 * transaction takes one.
 */
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { PostgresTaskStore } from '../src/index.js';
import { raised, resultText, within } from './conformance/harness.js';
import { countCheckouts } from './support/pool-checkouts.js';
import { listening, usePostgresStores } from './support/postgres-stores.js';
import { trackResources } from './support/resource-tracker.js';
import { eventually, sleep, stillPending } from './support/time.js';

const HOUR_MS = 3_600_000;
/** Long enough for whatever a change sets off on this instance to have run. */
const SETTLE_MS = 150;
const stores = usePostgresStores();

/** A store on a pool the test can count, listening unless told otherwise; closed after the test. */
async function countedStore(options: { listen?: false; backstopPollMs?: number } = {}) {
  const schema = await stores.schema();
  const pool = stores.pool();
  const store = stores.open(schema, { ...options, pool });
  if (options.listen !== false) await listening(store);
  return { schema, pool, store };
}

/** Records the ids a watch reports. */
async function recorded(store: PostgresTaskStore, taskIds: string[]) {
  const reported: string[] = [];
  const watch = await store.watchTasks(taskIds, (taskId) => reported.push(taskId));
  const heard = async (taskId: string, what: string) => {
    await eventually(what, async () => reported.includes(taskId));
    reported.splice(0);
  };
  return { watch, reported, heard };
}

// A 50 ms backstop poll, which must stay idle while notifications work.
describe('while notifications work', () => {
  it('a token costs one statement when another instance cancels its task, and none when its task completes here', async () => {
    const { schema, pool, store } = await countedStore({ backstopPollMs: 50 });
    const driving = stores.open(schema, { listen: false });
    const statements = countCheckouts(pool);
    const cancelledElsewhere = await store.createTask({ toolName: 'build', ttlMs: HOUR_MS });
    const completedHere = await store.createTask({ toolName: 'build', ttlMs: HOUR_MS });
    await sleep(SETTLE_MS);
    // The two creations, and nothing for holding their tokens.
    expect(statements()).toBe(2);
    expect(await store.completeTask(completedHere.taskId, resultText('done'))).toBe(true);
    await driving.cancelTask(cancelledElsewhere.taskId);
    await raised(cancelledElsewhere.token, 'the token of the task cancelled elsewhere');
    await sleep(SETTLE_MS);
    // The three calls' own statements, and the one read of the cancelled task's state.
    expect(statements()).toBe(4);
    expect(cancelledElsewhere.token.signal.reason).toBe('cancelled');
    expect(completedHere.token.isCancelled).toBe(false);
  });

  it('a token costs nothing when its task settles here for a waiter on another instance', async () => {
    const { schema, pool, store } = await countedStore({ backstopPollMs: 50 });
    const waiterElsewhere = stores.open(schema);
    await listening(waiterElsewhere);
    const { taskId, token } = await store.createTask({ toolName: 'build', ttlMs: HOUR_MS });
    const waiting = waiterElsewhere.waitForCompletion(taskId);
    expect(await stillPending(waiting, SETTLE_MS)).toBe(true);
    const statements = countCheckouts(pool);
    expect(await store.completeTask(taskId, resultText('done'))).toBe(true);
    expect((await within('the waiter elsewhere', waiting))?.task.status).toBe('completed');
    await sleep(SETTLE_MS);
    // The completion only: its NOTIFY (the task is awaited) reaches this instance's listener too,
    // and a change of status cannot raise the token this instance holds.
    expect(statements()).toBe(1);
    expect(token.isCancelled).toBe(false);
    await waiterElsewhere.cancelTask(taskId);
    await raised(token, 'the token, once the settled task is cancelled elsewhere');
  });

  it('a wait costs one re-read when its task completes here: the one its NOTIFY prompts', async () => {
    const { pool, store } = await countedStore({ backstopPollMs: 50 });
    const { taskId } = await store.createTask({ toolName: 'build', ttlMs: HOUR_MS });
    const waiting = store.waitForCompletion(taskId);
    expect(await stillPending(waiting, SETTLE_MS)).toBe(true);
    const statements = countCheckouts(pool);
    expect(await store.completeTask(taskId, resultText('done'))).toBe(true);
    expect((await within('the waiter', waiting))?.task.status).toBe('completed');
    await sleep(SETTLE_MS);
    // The completion, and one statement re-reading the task's state with its outcome.
    expect(statements()).toBe(2);
  });

  it('a watch costs a statement only when a watched task’s TTL changes', async () => {
    const { schema, pool, store } = await countedStore({ backstopPollMs: 50 });
    const driving = stores.open(schema, { listen: false });
    const watched = (await driving.createTask({ toolName: 'build', ttlMs: HOUR_MS })).taskId;
    const unwatched = (await driving.createTask({ toolName: 'build', ttlMs: HOUR_MS })).taskId;
    const changes = await recorded(store, [watched]);
    const statements = countCheckouts(pool);

    expect(await driving.completeTask(watched, resultText('done'))).toBe(true);
    expect(await driving.setTtl(unwatched, 2 * HOUR_MS)).toBe(true);
    await changes.heard(watched, 'the completion made elsewhere');
    await sleep(SETTLE_MS);
    expect(statements()).toBe(0);

    // Its own statement, and one read of the new deadline, prompted by its NOTIFY.
    expect(await store.setTtl(watched, 2 * HOUR_MS)).toBe(true);
    await changes.heard(watched, 'the TTL change made here');
    await sleep(SETTLE_MS);
    expect(statements()).toBe(2);
    changes.watch.close();
  });
});

describe('in poll-only mode', () => {
  it('a change made here to a watched task costs its own statement, and one read of the deadline when it moved it', async () => {
    const { schema, pool, store } = await countedStore({ listen: false, backstopPollMs: HOUR_MS });
    // Made elsewhere, so that only the watch looks at it here: no token of this store's.
    const { taskId } = await stores.open(schema, { listen: false }).createTask({ toolName: 'build', ttlMs: HOUR_MS });
    const changes = await recorded(store, [taskId]);
    const statements = countCheckouts(pool);

    expect(await store.completeTask(taskId, resultText('done'))).toBe(true);
    await changes.heard(taskId, 'the completion');
    await sleep(SETTLE_MS);
    expect(statements()).toBe(1);

    expect(await store.setTtl(taskId, 2 * HOUR_MS)).toBe(true);
    await changes.heard(taskId, 'the TTL change');
    await sleep(SETTLE_MS);
    expect(statements()).toBe(3);
    changes.watch.close();
  });

  it('a store that watches nothing any more holds no timer, though it polled while it did', async () => {
    const schema = await stores.schema();
    // Made elsewhere, so that this store holds no token of its own for them.
    const madeElsewhere = stores.open(schema, { listen: false });
    const other = (await madeElsewhere.createTask({ toolName: 'build', ttlMs: HOUR_MS })).taskId;
    const abandoned = (await madeElsewhere.createTask({ toolName: 'build', ttlMs: HOUR_MS })).taskId;
    await madeElsewhere.close();
    // Both connections open before the count, and no idle timers: every timer left is the store's.
    const pool = new pg.Pool({ connectionString: stores.connectionString, max: 2, idleTimeoutMillis: 0 });
    await Promise.all([pool.connect(), pool.connect()]).then((clients) => clients.forEach((client) => client.release()));
    const store = new PostgresTaskStore({ pool, schema, listen: false, reaper: false, backstopPollMs: 50 });
    const tracker = trackResources();
    try {
      const cancelled = await store.createTask({ toolName: 'build', ttlMs: HOUR_MS });
      const discarded = await store.createTask({ toolName: 'build', ttlMs: HOUR_MS });
      const expiring = await store.createTask({ toolName: 'build', ttlMs: 400 });
      const caller = new AbortController();
      const aborted = store.waitForCompletion(abandoned, { signal: caller.signal });
      const completed = store.waitForCompletion(other);
      const watch = await store.watchTasks([cancelled.taskId, discarded.taskId, other], () => {});
      expect(await stillPending(Promise.race([aborted, completed]), 150)).toBe(true);

      caller.abort(new Error('the client went away'));
      await expect(aborted).rejects.toThrow('the client went away');
      await store.cancelTask(cancelled.taskId);
      expect(await store.discardTask(discarded.taskId)).toBe(true);
      expect(await store.completeTask(other, resultText('done'))).toBe(true);
      expect((await within('the waiter of the completed task', completed))?.task.status).toBe('completed');
      await raised(expiring.token, 'the token at its deadline');
      watch.close();
      // A timer the store arms from here on is as much a leak as one it forgot to clear.
      await sleep(SETTLE_MS);
      tracker.stop();
      await eventually('every timer of the store gone', async () => tracker.alive().length === 0).catch(() => {
        throw new Error(`left alive while the store stays open:\n\n${tracker.alive().join('\n\n')}`);
      });
    } finally {
      tracker.dispose();
      await store.close();
      await pool.end();
    }
  });
});
