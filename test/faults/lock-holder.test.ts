/**
 * A session outside the store holds a task row's lock and sits idle in its transaction (a DBA's
 * forgotten `BEGIN; SELECT … FOR UPDATE`, a stuck migration). Only the calls on that task pay:
 * they end after the store's lock timeout with a `backend` error that names the lock, having
 * changed nothing; other tasks keep at least half their throughput, reads answer at once, and the
 * reaper keeps reaping.
 */
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { migrate, PostgresTaskStore, type PostgresTaskStoreOptions, type TaskStore } from '../../src/index.js';
import { tableContents } from '../support/table-contents.js';
import { useTestDatabase } from '../support/test-database.js';
import { BOUND_MS, sleep, within } from '../support/time.js';
import { useNoUnhandledErrors } from '../support/unhandled-errors.js';
import { useAdminPool, useClosedAfterEach } from './fault-tools.js';

/** Short, so the test is quick; the store's option makes it configurable. */
const LOCK_TIMEOUT_MS = 300;

useNoUnhandledErrors();
const database = useTestDatabase();
const admin = useAdminPool(database);
const opened = useClosedAfterEach();
let schemas = 0;

async function openStore(options: Partial<PostgresTaskStoreOptions> = {}): Promise<{ schema: string; store: PostgresTaskStore }> {
  const schema = `locked_${++schemas}`;
  await migrate({ pool: admin.pool, schema });
  const storeOptions: PostgresTaskStoreOptions & { lockTimeoutMs: number } = {
    connectionString: database.connectionString,
    schema,
    reaper: false,
    lockTimeoutMs: LOCK_TIMEOUT_MS,
    ...options,
  };
  const store = new PostgresTaskStore(storeOptions);
  opened.push(store);
  return { schema, store };
}

/** Another session: BEGIN, lock the task's row, then nothing. Ends with a rollback. */
async function holdRowLock(schema: string, taskId: string): Promise<{ release(): Promise<void> }> {
  const client = new pg.Client({ connectionString: database.connectionString, application_name: 'lock-holder' });
  client.on('error', () => {});
  await client.connect();
  await client.query('BEGIN');
  await client.query(`SELECT 1 FROM ${schema}.tasks WHERE task_id = $1 FOR UPDATE`, [taskId]);
  const holder = {
    async release() {
      if (opened.includes(holder)) opened.splice(opened.indexOf(holder), 1);
      await client.query('ROLLBACK').catch(() => {});
      await client.end();
    },
    close: () => holder.release(),
  };
  opened.push(holder);
  return holder;
}

async function outcome(call: () => Promise<unknown>): Promise<{ value: unknown } | { error: unknown }> {
  try {
    return { value: await call() };
  } catch (error) {
    return { error };
  }
}

/** Calls that write the task, each of which needs its row lock. */
function writes(store: TaskStore, taskId: string): [string, () => Promise<unknown>][] {
  return [
    ['applyInputResponses', () => store.applyInputResponses(taskId, { q: { roots: [] } })],
    ['requireInput', () => store.requireInput(taskId, { q: { method: 'roots/list' } })],
    ['setStatus', () => store.setStatus(taskId, 'input_required', 'still asking')],
    ['setTtl', () => store.setTtl(taskId, 7_200_000)],
    ['setTaskMeta', () => store.setTaskMeta(taskId, { touched: true })],
    ['completeTask', () => store.completeTask(taskId, { content: [] })],
    ['failTask', () => store.failTask(taskId, { code: -1, message: 'no' })],
    ['cancelTask', () => store.cancelTask(taskId, 'no')],
    ['discardTask', () => store.discardTask(taskId)],
  ];
}

describe('a row locked by an idle transaction elsewhere', () => {
  it('every write on that task ends after the lock timeout with a backend error naming the lock, and changes nothing', async () => {
    const { schema, store } = await openStore();
    const { taskId } = await store.createTask({ toolName: 'locked', ttlMs: 3_600_000 });
    await store.requireInput(taskId, { q: { method: 'roots/list' } });
    const before = await tableContents(admin.pool, schema);
    const holder = await holdRowLock(schema, taskId);

    for (const [what, call] of writes(store, taskId)) {
      const started = performance.now();
      const result = await within(`${what} on the locked task`, outcome(call), BOUND_MS);
      const elapsed = performance.now() - started;
      expect(result, what).toMatchObject({ error: { name: 'TaskStoreError', kind: 'backend' } });
      expect((result as { error: Error }).error.message, what).toMatch(/lock/i);
      // A lock timeout never fires early: the call did wait for the lock.
      expect(elapsed, `${what} waited for the lock`).toBeGreaterThanOrEqual(LOCK_TIMEOUT_MS * 0.9);
    }
    // Reads need no row lock and answer at once.
    for (const [what, call] of [
      ['getTask', () => store.getTask(taskId)],
      ['getTaskResult', () => store.getTaskResult(taskId)],
      ['outstandingInputRequests', () => store.outstandingInputRequests(taskId)],
      ['resumeContext', () => store.resumeContext(taskId)],
      ['listTasks', () => store.listTasks()],
    ] as const) {
      expect(await within(`${what} on the locked task`, outcome(call), LOCK_TIMEOUT_MS * 3), what).toHaveProperty('value');
    }
    expect(await tableContents(admin.pool, schema), 'nothing was applied').toStrictEqual(before);

    await holder.release();
    expect(await store.applyInputResponses(taskId, { q: { roots: [] } })).toMatchObject({ accepted: ['q'], complete: true });
    expect(await store.completeTask(taskId, { content: [] })).toBe(true);
  });

  it('with 15 callers stuck on it, other tasks keep at least half their throughput, reads stay prompt, and the reaper keeps working', async () => {
    const { schema, store } = await openStore({ reaper: { intervalMs: 100 } });
    const reaped: number[] = [];
    store.onReaperPass((pass) => {
      if (!(pass instanceof Error)) reaped.push(pass.tombstoned);
    });
    const locked = await store.createTask({ toolName: 'locked', ttlMs: 3_600_000 });
    const others = await Promise.all(Array.from({ length: 4 }, () => store.createTask({ toolName: 'other', ttlMs: 3_600_000 })));

    /** Writes on the other tasks, four at a time, for `ms`: how many finished. */
    const throughput = async (ms: number) => {
      const until = performance.now() + ms;
      let done = 0;
      await Promise.all(
        others.map(async ({ taskId }) => {
          for (let n = 0; performance.now() < until; n++) {
            await store.setStatus(taskId, 'working', `step ${n}`);
            done++;
          }
        }),
      );
      return done;
    };
    const WINDOW_MS = 800;
    let baseline = 0;
    let underLock = 0;
    for (let round = 0; round < 2; round++) {
      baseline += await within('writes on other tasks', throughput(WINDOW_MS), WINDOW_MS + BOUND_MS);

      const holder = await holdRowLock(schema, locked.taskId);
      let holding = true;
      const stuck = Array.from({ length: 15 }, async (_, caller) => {
        while (holding) {
          await store.setStatus(locked.taskId, 'working', `caller ${caller}`).catch(() => {});
          // A call that fails at once (a closed store) must not spin without yielding.
          await new Promise((resolve) => setImmediate(resolve));
        }
      });
      try {
        // Let the stuck callers pile up before measuring.
        await sleep(50);
        const reapedBefore = reaped.length;
        const expired = await within('createTask of another task', store.createTask({ toolName: 'expired', ttlMs: 0 }), BOUND_MS);
        const [counted, prompt] = await Promise.all([
          within('writes on other tasks', throughput(WINDOW_MS), WINDOW_MS + BOUND_MS),
          within('an unrelated getTask', store.getTask(others[0]!.taskId), LOCK_TIMEOUT_MS * 3),
        ]);
        underLock += counted;
        expect(prompt?.taskId).toBe(others[0]!.taskId);
        await within(
          'a reaper pass that tombstones the expired task',
          (async () => {
            for (;;) {
              const { rowCount } = await admin.pool.query(`SELECT 1 FROM ${schema}.tombstones WHERE task_id = $1`, [expired.taskId]);
              if (rowCount === 1 && reaped.length > reapedBefore) return;
              await sleep(20);
            }
          })(),
          BOUND_MS,
        );
      } finally {
        holding = false;
        await holder.release();
      }
      await within('the stuck callers giving up', Promise.all(stuck), BOUND_MS);
    }
    expect(baseline).toBeGreaterThan(0);
    expect(underLock / baseline, `${underLock} writes on other tasks under the lock, ${baseline} without`).toBeGreaterThanOrEqual(0.5);
  });

  it('aborting a wait stuck behind the lock rejects with the signal’s reason, and nothing goes unhandled', async () => {
    const { schema, store } = await openStore();
    const { taskId } = await store.createTask({ toolName: 'locked', ttlMs: 3_600_000 });
    const holder = await holdRowLock(schema, taskId);
    const controller = new AbortController();
    const waiting = outcome(() => store.waitForCompletion(taskId, { signal: controller.signal }));
    await sleep(50);
    const reason = new Error('the caller gave up');
    controller.abort(reason);
    expect(await within('the aborted wait', waiting)).toStrictEqual({ error: reason });
    await holder.release();
  });
});
