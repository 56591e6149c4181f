/**
 * Failure handling of PostgresTaskStore: database failures surface as `backend` errors that carry
 * no credentials, options are validated up front, close() is orderly, and input that fails
 * validation leaves the database exactly as it was.
 */
import pg from 'pg';
import { createPool } from '../src/postgres/pool.js';
import { afterEach, describe, expect, test } from 'vitest';
import {
  generateTaskId,
  migrate,
  PostgresTaskStore,
  TaskStoreError,
  type PostgresTaskStoreOptions,
  type ReapResult,
  type TaskStoreErrorKind,
} from '../src/index.js';
import { useTestResources } from './support/postgres-stores.js';
import { useTestDatabase } from './support/test-database.js';
import { BOUND_MS, eventually, sleep, within } from './support/time.js';

const database = useTestDatabase();
const PASSWORD = 'S3cretPassw0rd';
/** Port 1 refuses connections on any machine the tests run on. */
const REFUSING_URL = `postgres://someuser:${PASSWORD}@127.0.0.1:1/db`;

const resources = useTestResources(database);
const openStores = resources.stores;
let schemas = 0;

// -- Helpers ------------------------------------------------------------------------------------

async function freshSchema(): Promise<string> {
  const schema = `errors_${++schemas}`;
  await migrate({ pool: resources.admin, schema });
  return schema;
}

function openStore(options: PostgresTaskStoreOptions): PostgresTaskStore {
  const store = new PostgresTaskStore({ reaper: false, ...options });
  openStores.push(store);
  return store;
}

/** The error `promise` rejects with; fails the test if it resolves or takes longer than the bound. */
async function rejection(what: string, promise: Promise<unknown>, ms = BOUND_MS): Promise<unknown> {
  return within(
    what,
    promise.then(
      (value) => {
        throw new Error(`${what} resolved with ${JSON.stringify(value)} instead of rejecting`);
      },
      (error: unknown) => error,
    ),
    ms,
  );
}

/** The error a call throws or rejects with, whichever way it fails. */
async function failureOf(what: string, call: () => unknown): Promise<unknown> {
  let result: unknown;
  try {
    result = call();
  } catch (error) {
    return error;
  }
  return rejection(what, Promise.resolve(result));
}

function expectStoreError(error: unknown, kind: TaskStoreErrorKind): asserts error is TaskStoreError {
  expect(error, String(error)).toBeInstanceOf(TaskStoreError);
  expect((error as TaskStoreError).kind, (error as Error).message).toBe(kind);
}

/** A backend error that says nothing of the credentials it was given. */
function expectCleanBackendError(error: unknown, connectionString: string): void {
  expectStoreError(error, 'backend');
  for (const text of [error.message, String(error), JSON.stringify(error), error.stack ?? '']) {
    expect(text).not.toContain(PASSWORD);
    expect(text).not.toContain(connectionString);
  }
  // The driver's error is kept for the operator's own logs.
  expect(error.cause).toBeInstanceOf(Error);
  expect(error.cause).not.toBeInstanceOf(TaskStoreError);
}

/** Constructs a store expecting the constructor to refuse; closes it if it did not. */
async function constructionError(options: PostgresTaskStoreOptions): Promise<unknown> {
  let store: PostgresTaskStore;
  try {
    store = new PostgresTaskStore(options);
  } catch (error) {
    return error;
  }
  await store.close();
  return new Error(`the store accepted ${JSON.stringify({ ...options, pool: options?.pool ? '<pool>' : undefined })}`);
}

// -- Database failures --------------------------------------------------------------------------

describe('database failures', () => {
  test('an unreachable server: every call fails with a backend error carrying no credentials', async () => {
    const store = openStore({ connectionString: REFUSING_URL, listen: false });
    const id = generateTaskId();
    const calls: [string, () => Promise<unknown>][] = [
      ['getTask', () => store.getTask(id)],
      ['createTask', () => store.createTask({ toolName: 'down' })],
      ['listTasks', () => store.listTasks()],
      ['taskPresence', () => store.taskPresence(id)],
      ['setStatus', () => store.setStatus(id, 'working', 'x')],
      ['completeTask', () => store.completeTask(id, { content: [] })],
      ['cancelTask', () => store.cancelTask(id)],
      ['reapExpired', () => store.reapExpired()],
    ];
    for (const [name, call] of calls) {
      const error = await rejection(name, call());
      expectCleanBackendError(error, REFUSING_URL);
    }
    const error = (await rejection('getTask', store.getTask(id))) as TaskStoreError;
    expect((error.cause as { code?: string }).code).toBe('ECONNREFUSED');
  });

  test.each([
    ['a port out of range', `postgres://someuser:${PASSWORD}@127.0.0.1:99999/db`],
    ['an unknown host', `postgres://someuser:${PASSWORD}@no-such-host.invalid:5432/db`],
  ])('%s: a backend error carrying no credentials', async (_, url) => {
    const store = openStore({ connectionString: url, listen: false });
    expectCleanBackendError(await rejection('getTask', store.getTask(generateTaskId()), 15_000), url);
  });

  test('credentials the server refuses: a backend error carrying no credentials', async () => {
    const url = new URL(database.connectionString);
    url.username = 'no_such_role';
    url.password = PASSWORD;
    const store = openStore({ connectionString: url.toString(), listen: false });
    const error = await rejection('getTask', store.getTask(generateTaskId()));
    expectCleanBackendError(error, url.toString());
    expect(((error as TaskStoreError).cause as { code?: string }).code).toMatch(/^28/); // invalid authorization
  });

  test('waitForCompletion on an unreachable server rejects with a backend error', async () => {
    const store = openStore({ connectionString: REFUSING_URL, listen: false });
    const error = await rejection('waitForCompletion', store.waitForCompletion(generateTaskId()));
    expectCleanBackendError(error, REFUSING_URL);
  });

  test('a store with its listener and reaper on survives a server that is down, and reports it', async () => {
    const store = new PostgresTaskStore({ connectionString: REFUSING_URL, reaper: { intervalMs: 50 } });
    openStores.push(store);
    const passes: (ReapResult | Error)[] = [];
    store.onReaperPass((outcome) => passes.push(outcome));
    const reconnecting: string[] = [];
    store.onListenerStateChange((change) => {
      if (change.state === 'reconnecting') reconnecting.push(String(change.error));
    });
    await eventually('failed reaper passes and listener retries', async () => passes.length >= 2 && reconnecting.length >= 1);
    expect(passes.every((outcome) => outcome instanceof Error)).toBe(true);
    expectCleanBackendError(await rejection('getTask', store.getTask(generateTaskId())), REFUSING_URL);
  });

  test('a schema that was never migrated: backend errors (undefined table), not a crash', async () => {
    const store = openStore({ connectionString: database.connectionString, schema: 'never_migrated' });
    const id = generateTaskId();
    for (const [name, call] of [
      ['getTask', () => store.getTask(id)],
      ['createTask', () => store.createTask({ toolName: 'nowhere' })],
      ['listTasks', () => store.listTasks()],
      ['taskPresence', () => store.taskPresence(id)],
      ['requireInput', () => store.requireInput(id, { k: { method: 'roots/list' } })],
      ['discardTask', () => store.discardTask(id)],
      ['reapExpired', () => store.reapExpired()],
    ] as [string, () => Promise<unknown>][]) {
      const error = await rejection(name, call());
      expectCleanBackendError(error, database.connectionString);
      expect(((error as TaskStoreError).cause as { code?: string }).code, name).toBe('42P01');
      // It names the schema and says what to do.
      expect((error as Error).message, name).toContain(`schema "never_migrated" was never migrated: run migrate({ schema: 'never_migrated' })`);
    }
    // The store is still usable once the schema exists.
    await migrate({ pool: resources.admin, schema: 'never_migrated' });
    const { taskId } = await store.createTask({ toolName: 'now-migrated' });
    expect((await store.getTask(taskId))?.status).toBe('working');
  });

  test('waitForCompletion on a schema that was never migrated rejects with a backend error saying so', async () => {
    const store = openStore({ connectionString: database.connectionString, schema: 'never_migrated_either' });
    const error = await rejection('waitForCompletion', store.waitForCompletion(generateTaskId()));
    expectStoreError(error, 'backend');
    expect(error.message).toContain('run migrate(');
  });

  test('a schema migrated by a newer version: calls that fail say so, and migrate() leaves it alone saying so', async () => {
    const schema = await freshSchema();
    const store = openStore({ pool: resources.admin, schema });
    const { taskId } = await store.createTask({ toolName: 'before' });
    // What a later version might do: a migration this one does not know, and a column it does not fill.
    await resources.admin.query(`INSERT INTO ${schema}.kysely_migration (name, timestamp) VALUES ('9999_from_the_future', now())`);
    await resources.admin.query(`ALTER TABLE ${schema}.tasks ADD COLUMN future text`);
    await resources.admin.query(`UPDATE ${schema}.tasks SET future = 'x'`);
    await resources.admin.query(`ALTER TABLE ${schema}.tasks ALTER COLUMN future SET NOT NULL`);
    // What still works, works: the store does not stop a rolling upgrade.
    expect((await store.getTask(taskId))?.status).toBe('working');
    const error = await rejection('createTask', store.createTask({ toolName: 'after' }));
    expectCleanBackendError(error, database.connectionString);
    expect((error as Error).message).toContain(
      `schema "${schema}" was migrated by a newer version of mcp-task-store-postgres (9999_from_the_future unknown to this one): upgrade this instance`,
    );
    const refused = await rejection('migrate', migrate({ pool: resources.admin, schema }));
    expectStoreError(refused, 'backend');
    expect(refused.message).toContain('was migrated by a newer version');
  });

  test('a schema behind the package: calls that fail name the migrations not applied and say to run migrate()', async () => {
    const schema = await freshSchema();
    const store = openStore({ pool: resources.admin, schema });
    // As if 0001 had never been applied here: no record of it, and no tasks table.
    await resources.admin.query(`DELETE FROM ${schema}.kysely_migration; DROP TABLE ${schema}.tasks CASCADE`);
    const error = await rejection('getTask', store.getTask(generateTaskId()));
    expectStoreError(error, 'backend');
    // Every migration this version ships is named, 0001_tasks first.
    expect(error.message).toContain(`schema "${schema}" is behind this version of mcp-task-store-postgres (not applied: 0001_tasks`);
    expect(error.message).toContain(`): run migrate({ schema: '${schema}' })`);
  });

  test('a failure no schema mismatch explains is reported as it is, even on a current schema', async () => {
    const schema = await freshSchema();
    const store = openStore({ pool: resources.admin, schema });
    await resources.admin.query(`ALTER TABLE ${schema}.tasks ADD CONSTRAINT no_tools_named_x CHECK (tool_name <> 'x')`);
    const error = await rejection('createTask', store.createTask({ toolName: 'x' }));
    expectStoreError(error, 'backend');
    expect(error.message).toMatch(/^database error: .*no_tools_named_x.*\(23514\)$/);
  });

  test('migrate() against an unreachable server: a backend error carrying no credentials', async () => {
    const error = await rejection('migrate', migrate({ connectionString: REFUSING_URL, schema: 'anything' }));
    expectCleanBackendError(error, REFUSING_URL);
    expect(((error as TaskStoreError).cause as { code?: string }).code).toBe('ECONNREFUSED');
  });

  test('migrate() with a caller pool to an unreachable server: a backend error, and the pool stays the caller’s', async () => {
    const pool = createPool(REFUSING_URL, 10);
    try {
      const error = await rejection('migrate', migrate({ pool, schema: 'anything' }));
      expectStoreError(error, 'backend');
      expect(error.message).not.toContain(PASSWORD);
      expect(pool.ended).toBe(false);
    } finally {
      await pool.end();
    }
  });
});

// -- Faults never crash the host ------------------------------------------------------------------

/**
 * Records what would otherwise crash the process (an 'error' event nobody listens to, a promise
 * nobody awaits) while a test runs. Vitest would report these too, but after the test passed.
 */
function recordUncaught(): { readonly errors: unknown[] } {
  const errors: unknown[] = [];
  const record = (error: unknown) => errors.push(error);
  process.on('uncaughtException', record);
  process.on('unhandledRejection', record);
  afterEach(() => {
    process.off('uncaughtException', record);
    process.off('unhandledRejection', record);
  });
  return { errors };
}

describe('faults never crash the host', () => {
  const uncaught = recordUncaught();
  afterEach(() => {
    uncaught.errors.length = 0;
  });

  /** A URL whose connections carry `application_name`, so a test can terminate exactly them. */
  function urlNamed(applicationName: string): string {
    const url = new URL(database.connectionString);
    url.searchParams.set('application_name', applicationName);
    return url.toString();
  }

  /** Terminates every backend of `applicationNames`; how many there were. */
  async function terminate(...applicationNames: string[]): Promise<number> {
    const { rows } = await resources.admin.query<{ n: number }>(
      `SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity
        WHERE datname = current_database() AND application_name = ANY($1)`,
      [applicationNames],
    );
    return rows[0]!.n;
  }

  /**
   * 8 loops of getTask on `store` while its backends are terminated 5 times, each time once the
   * loops have got through again; then the store must serve calls, settle a task and wake a waiter
   * that was pending all along.
   */
  async function survivesTerminations(store: PostgresTaskStore, schema: string, applicationName: string): Promise<void> {
    const { taskId } = await store.createTask({ toolName: 'under-fire', ttlMs: null });
    const waiting = store.waitForCompletion(taskId);
    // A wait whose own registration is cut off fails like any call; this one is registered first.
    await eventually('the wait registered', async () => {
      const { rows } = await resources.admin.query<{ awaited: boolean }>(`SELECT awaited FROM ${schema}.tasks WHERE task_id = $1`, [taskId]);
      return rows[0]!.awaited;
    });
    let served = 0;
    const failures: unknown[] = [];
    let stop = false;
    const loops = Array.from({ length: 8 }, async () => {
      while (!stop) {
        try {
          await store.getTask(taskId);
          served += 1;
        } catch (error) {
          failures.push(error);
          await new Promise((resolve) => setImmediate(resolve));
        }
      }
    });
    let terminated = 0;
    try {
      for (let round = 0; round < 5; round++) {
        const target = served + 20;
        await eventually(`getTask serving again before termination ${round + 1}`, async () => served >= target, 15_000);
        terminated += await terminate(applicationName, 'mcp-task-store-listener');
      }
      const target = served + 20;
      await eventually('getTask serving after the last termination', async () => served >= target, 15_000);
    } finally {
      stop = true;
      await Promise.all(loops);
    }
    expect(terminated).toBeGreaterThanOrEqual(5);
    for (const failure of failures) expectStoreError(failure, 'backend');
    expect(await store.completeTask(taskId, { content: [] })).toBe(true);
    expect((await within('the waiter', waiting, 15_000))?.task.status).toBe('completed');
    expect(uncaught.errors).toEqual([]);
  }

  test('terminated backends under load, on the store’s own pool: callers get backend errors, the store recovers', async () => {
    const schema = await freshSchema();
    const store = openStore({ connectionString: urlNamed('faults_own_pool'), schema });
    await survivesTerminations(store, schema, 'faults_own_pool');
  });

  test('terminated backends under load, on a caller’s pool without an error listener: the same', async () => {
    const schema = await freshSchema();
    // A pool as a caller may make it, with no pool.on('error'): the store must not rely on one.
    const pool = new pg.Pool({ connectionString: urlNamed('faults_caller_pool'), max: 10 });
    try {
      const store = openStore({ pool, schema });
      await survivesTerminations(store, schema, 'faults_caller_pool');
      await store.close();
      // The store's listeners leave with it.
      expect(pool.listenerCount('error')).toBe(0);
      expect(pool.listenerCount('connect')).toBe(0);
    } finally {
      await pool.end().catch(() => {});
    }
  });

  test.each([
    // (URL's port setter ignores an invalid port, so the text is edited.)
    ['a port out of range', (url: string) => url.replace(/:\d+\//, ':99999/')],
    ['a certificate file that does not exist', (url: string) => `${url}?sslmode=verify-full&sslrootcert=/nonexistent`],
  ])('%s: calls and migrate() fail with backend errors, and nothing is left unhandled', async (_, spoil) => {
    const url = spoil(database.connectionString);
    const store = openStore({ connectionString: url, reaper: { intervalMs: 50 } });
    const reconnecting = new Promise<Error | undefined>((resolve) =>
      store.onListenerStateChange((change) => change.state === 'reconnecting' && resolve(change.error)),
    );
    expectStoreError(await rejection('createTask', store.createTask({ toolName: 'x' })), 'backend');
    expectStoreError(await rejection('getTask', store.getTask(generateTaskId())), 'backend');
    expect(await within('the listener reporting its failure', reconnecting)).toBeInstanceOf(Error);
    expectStoreError(await rejection('migrate', migrate({ connectionString: url })), 'backend');
    await store.close();
    expect(uncaught.errors).toEqual([]);
  });

  test('aborting a wait whose first statement waits for a row lock rejects with the reason, and nothing is left unhandled', async () => {
    const schema = await freshSchema();
    const store = openStore({ pool: resources.admin, schema });
    const { taskId } = await store.createTask({ toolName: 'locked' });
    const holder = await resources.client();
    await holder.query('BEGIN');
    await holder.query(`SELECT 1 FROM ${schema}.tasks WHERE task_id = $1 FOR UPDATE`, [taskId]);
    const controller = new AbortController();
    const waiting = store.waitForCompletion(taskId, { signal: controller.signal });
    await eventually('the wait blocking on the row lock', async () => {
      const { rows } = await resources.admin.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
      );
      return rows[0]!.n > 0;
    });
    const reason = new Error('the caller gave up');
    controller.abort(reason);
    await expect(waiting).rejects.toBe(reason);
    await holder.query('ROLLBACK');
    // Let the abandoned statement finish, and any rejection surface.
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(uncaught.errors).toEqual([]);
  });

  test('a listener connection string node-postgres cannot use: the listener retries, the store works, nothing is left unhandled', async () => {
    const schema = await freshSchema();
    const store = openStore({
      pool: resources.admin,
      schema,
      listen: { connectionString: 'postgres://user@127.0.0.1:99999/db' },
    });
    const reconnecting = new Promise<void>((resolve) =>
      store.onListenerStateChange((change) => change.state === 'reconnecting' && resolve()),
    );
    await within('the listener reporting its failure', reconnecting);
    const { taskId } = await store.createTask({ toolName: 'x' });
    expect((await store.getTask(taskId))?.status).toBe('working');
    expect(uncaught.errors).toEqual([]);
  });
});

// -- A row lock held by another session ------------------------------------------------------------

describe('a row lock held by another session', () => {
  const LOCK_TIMEOUT_MS = 300;

  /** Another session holding the task's row lock (as an idle-in-transaction client would). */
  async function holdRowLock(schema: string, taskId: string): Promise<{ release(): Promise<void> }> {
    const holder = await resources.client();
    await holder.query('BEGIN');
    await holder.query(`SELECT 1 FROM ${schema}.tasks WHERE task_id = $1 FOR UPDATE`, [taskId]);
    return { release: async () => void (await holder.query('ROLLBACK')) };
  }

  function expectLocked(error: unknown, what: string): void {
    expectStoreError(error, 'backend');
    expect((error as Error).message, what).toMatch(/locked/);
    expect((error as Error).message, what).toContain(`${LOCK_TIMEOUT_MS} ms`);
  }

  test('every call that writes the task fails after lockTimeoutMs saying the task is locked; reads answer; all works once it is released', async () => {
    const schema = await freshSchema();
    const store = openStore({ pool: resources.admin, schema, lockTimeoutMs: LOCK_TIMEOUT_MS, limits: { maxPayloadBytes: 1024 } });
    const { taskId } = await store.createTask({ toolName: 'locked' });
    const oversized = { content: [{ type: 'text' as const, text: 'x'.repeat(2048) }] };
    await store.requireInput(taskId, { k: { method: 'roots/list' } });
    const lock = await holdRowLock(schema, taskId);
    const reportedToFailedWatch: string[] = [];

    const writes: [string, () => Promise<unknown>][] = [
      ['setStatus', () => store.setStatus(taskId, 'working', 'x')],
      ['completeTask', () => store.completeTask(taskId, { content: [] })],
      ['failTask', () => store.failTask(taskId, { code: 1, message: 'x' })],
      // An oversized outcome still ends the task, under the same bound.
      ['completeTask with an oversized result', () => store.completeTask(taskId, oversized)],
      ['cancelTask', () => store.cancelTask(taskId)],
      ['setTtl', () => store.setTtl(taskId, 60_000)],
      ['setTaskMeta', () => store.setTaskMeta(taskId, { m: 1 })],
      ['requireInput', () => store.requireInput(taskId, { k: { method: 'roots/list' } })],
      ['applyInputResponses', () => store.applyInputResponses(taskId, { k: { action: 'accept' } })],
      ['discardTask', () => store.discardTask(taskId)],
      ['waitForCompletion', () => store.waitForCompletion(taskId)],
      // A watch flags its tasks awaited, as a wait does; one that failed watches nothing.
      ['watchTasks', () => store.watchTasks([taskId], (id) => reportedToFailedWatch.push(id))],
    ];
    for (const [name, call] of writes) {
      const startedAt = Date.now();
      expectLocked(await rejection(name, call(), 10_000), name);
      expect(Date.now() - startedAt, name).toBeGreaterThanOrEqual(LOCK_TIMEOUT_MS - 50);
    }
    // Reads never wait for a row lock.
    expect((await within('getTask', store.getTask(taskId)))?.status).toBe('input_required');
    expect(await within('outstandingInputRequests', store.outstandingInputRequests(taskId))).toEqual({ k: { method: 'roots/list' } });
    expect((await within('taskPresence', store.taskPresence(taskId))).state).toBe('present');

    await lock.release();
    expect(await store.applyInputResponses(taskId, { k: { action: 'accept' } })).toMatchObject({ complete: true });
    expect(await store.completeTask(taskId, { content: [] })).toBe(true);
    const watched = await store.createTask({ toolName: 'watched' });
    const reported: string[] = [];
    const watch = await store.watchTasks([taskId, watched.taskId], (id) => reported.push(id));
    await store.cancelTask(taskId);
    await store.cancelTask(watched.taskId);
    await eventually('a working watch told of both cancels', async () => reported.includes(taskId) && reported.includes(watched.taskId));
    expect(reportedToFailedWatch).toEqual([]);
    watch.close();
  });

  test('discardTask gives up after lockTimeoutMs on a tombstone or a history row another session holds', async () => {
    const schema = await freshSchema();
    const store = openStore({ pool: resources.admin, schema, lockTimeoutMs: LOCK_TIMEOUT_MS });
    const tombstoned = (await store.createTask({ toolName: 'gone' })).taskId;
    expect(await store.setTtl(tombstoned, 0)).toBe(true);
    expect(await store.reapExpired()).toEqual({ tombstoned: 1, purged: 0 });
    const live = (await store.createTask({ toolName: 'kept' })).taskId;
    for (const [what, table, taskId] of [
      ['a tombstone', 'tombstones', tombstoned],
      ['a history row', 'task_history', live],
    ] as const) {
      const holder = await resources.client();
      await holder.query('BEGIN');
      await holder.query(`SELECT 1 FROM ${schema}.${table} WHERE task_id = $1 FOR UPDATE`, [taskId]);
      expectLocked(await rejection(`discarding ${what} held elsewhere`, store.discardTask(taskId), 10_000), what);
      await holder.query('ROLLBACK');
    }
    expect(await store.discardTask(tombstoned)).toBe(true);
    expect(await store.discardTask(live)).toBe(true);
  });

  test('a call queued behind another on a locked task gives up within lockTimeoutMs of its own start; the database’s error is the cause', async () => {
    const schema = await freshSchema();
    // Long enough that a call overrunning its bound cannot pass for timing noise.
    const bound = 1000;
    const store = openStore({ pool: resources.admin, schema, lockTimeoutMs: bound });
    const { taskId } = await store.createTask({ toolName: 'locked' });
    const lock = await holdRowLock(schema, taskId);
    try {
      const first = rejection('the first call', store.setStatus(taskId, 'working', 'first'), 10_000);
      await sleep(bound / 2);
      const startedAt = Date.now();
      // Its turn comes when the first gives up, with half its bound left for the row lock.
      const queued = await rejection('the call queued behind it', store.setStatus(taskId, 'working', 'second'), 10_000);
      const waitedMs = Date.now() - startedAt;
      expect(waitedMs).toBeGreaterThanOrEqual(bound - 50);
      expect(waitedMs).toBeLessThan(bound * 1.5);
      for (const error of [await first, queued]) {
        expectStoreError(error, 'backend');
        expect((error as Error).message).toContain('locked by another database session');
        expect((error as Error).cause).toMatchObject({ code: '55P03' });
      }
    } finally {
      await lock.release();
    }
  });

  test('waits begun together, one on a task another session holds, all hear their completion on another instance', async () => {
    const schema = await freshSchema();
    const waiter = openStore({ pool: resources.admin, schema, lockTimeoutMs: 10_000 });
    const finisher = openStore({ pool: resources.admin, schema });
    await eventually('the waiting instance listening', async () => waiter.listenerState === 'listening');
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) ids.push((await finisher.createTask({ toolName: 'free' })).taskId);
    const lock = await holdRowLock(schema, ids[0]!);
    const waits = ids.map((taskId) => waiter.waitForCompletion(taskId));
    // The free tasks are flagged at once; the held one once the lock is gone.
    await eventually('the free tasks awaited', async () => {
      const { rows } = await resources.admin.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${schema}.tasks WHERE awaited`);
      return rows[0]!.n === ids.length - 1;
    });
    await lock.release();
    for (const taskId of ids) expect(await finisher.completeTask(taskId, { content: [{ type: 'text', text: taskId }] })).toBe(true);
    const snapshots = await within('every wait woken by NOTIFY', Promise.all(waits));
    expect(snapshots.map((snapshot) => snapshot?.result)).toEqual(ids.map((taskId) => ({ content: [{ type: 'text', text: taskId }] })));
  });

  test('calls piling up on a locked task hold at most one connection; other tasks and the reaper carry on', async () => {
    const schema = await freshSchema();
    const pool = createPool(database.connectionString, 4);
    try {
      const store = openStore({ pool, schema, lockTimeoutMs: LOCK_TIMEOUT_MS, reaper: { intervalMs: 3_600_000 } });
      const { taskId: locked } = await store.createTask({ toolName: 'locked' });
      const lock = await holdRowLock(schema, locked);
      let stop = false;
      const failures: unknown[] = [];
      // 15 callers keep hitting the locked task, with a pool of 4.
      const hammering = Array.from({ length: 15 }, async () => {
        while (!stop) await store.setStatus(locked, 'working', 'again').catch((error: unknown) => failures.push(error));
      });
      try {
        let mostWaiting = 0;
        for (let i = 0; i < 20; i++) {
          const { taskId } = await within('createTask beside the locked task', store.createTask({ toolName: 'free' }));
          expect(await within('setStatus beside the locked task', store.setStatus(taskId, 'working', 'step'))).toBe(true);
          expect(await within('completeTask beside the locked task', store.completeTask(taskId, { content: [] }))).toBe(true);
          const { rows } = await resources.admin.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM pg_stat_activity
              WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%lock_timeout%'`,
          );
          mostWaiting = Math.max(mostWaiting, rows[0]!.n);
        }
        expect(await within('a reaper pass beside the locked task', store.reapExpired())).toEqual({ tombstoned: 0, purged: 0 });
        expect(mostWaiting).toBeLessThanOrEqual(1);
        // The free tasks may all finish before the first locked call times out.
        await eventually('a call on the locked task timing out', async () => failures.length > 0);
        for (const failure of failures) expectLocked(failure, 'a call on the locked task');
      } finally {
        stop = true;
        await Promise.all(hammering);
        await lock.release();
      }
      expect(await store.setStatus(locked, 'working', 'released')).toBe(true);
    } finally {
      await pool.end();
    }
  });
});

// -- Options ------------------------------------------------------------------------------------

describe('options', () => {
  test.each<[string, Partial<PostgresTaskStoreOptions>]>([
    ['limits.maxTasks (memory-store only)', { limits: { maxTasks: 10 } }],
    ['limits.maxRetainedBytes (memory-store only)', { limits: { maxRetainedBytes: 1_000_000 } }],
    ['limits.maxPayloadBytes 0', { limits: { maxPayloadBytes: 0 } }],
    ['limits.maxPayloadBytes 1.5', { limits: { maxPayloadBytes: 1.5 } }],
    ['limits.maxTasksPerOwner -1', { limits: { maxTasksPerOwner: -1 } }],
    ['defaultTtlMs -1', { defaultTtlMs: -1 }],
    ['defaultTtlMs 1.5', { defaultTtlMs: 1.5 }],
    ['defaultTtlMs NaN', { defaultTtlMs: Number.NaN }],
    ['defaultTtlMs Infinity', { defaultTtlMs: Number.POSITIVE_INFINITY }],
    ['defaultTtlMs as a string', { defaultTtlMs: '1000' as unknown as number }],
    ['defaultTtlMs null', { defaultTtlMs: null as unknown as number }],
    ['limits null', { limits: null as unknown as undefined }],
    ['an unknown limit', { limits: { bogus: 1 } as unknown as undefined }],
    ['listen true', { listen: true as unknown as false }],
    ['listen null', { listen: null as unknown as false }],
    ['a listener connection string that is not a string', { listen: { connectionString: 5 as unknown as string } }],
    ['reaper true', { reaper: true as unknown as false }],
    ['reaper null', { reaper: null as unknown as false }],
    ['preparedStatements "yes"', { preparedStatements: 'yes' as unknown as boolean }],
    ['lockTimeoutMs 0', { lockTimeoutMs: 0 }],
    ['lockTimeoutMs 1.5', { lockTimeoutMs: 1.5 }],
    ['lockTimeoutMs 2^31', { lockTimeoutMs: 2 ** 31 }],
    ['backstopPollMs 0', { backstopPollMs: 0 }],
    ['backstopPollMs 2.5', { backstopPollMs: 2.5 }],
    ['backstopPollMs 2^31', { backstopPollMs: 2 ** 31 }],
    ['an unknown option', { bogus: true } as unknown as Partial<PostgresTaskStoreOptions>],
    ['a misspelled option', { lockTimeout: 100 } as unknown as Partial<PostgresTaskStoreOptions>],
    ['schema pg_catalog', { schema: 'pg_catalog' }],
    ['schema pg_temp', { schema: 'pg_temp' }],
    ['schema pg_toast', { schema: 'pg_toast' }],
    ['schema information_schema', { schema: 'information_schema' }],
    ['schema with upper case', { schema: 'Tasks' }],
  ])('%s is refused with invalid_input', async (_, options) => {
    const error = await constructionError({ pool: resources.admin, listen: false, reaper: false, ...options });
    expectStoreError(error, 'invalid_input');
  });

  test('a pool that is not a pool, or no options at all, is refused with invalid_input', async () => {
    expectStoreError(await constructionError({ pool: {} as pg.Pool }), 'invalid_input');
    expectStoreError(await constructionError({ pool: database.connectionString as unknown as pg.Pool }), 'invalid_input');
    expectStoreError(await constructionError(undefined as unknown as PostgresTaskStoreOptions), 'invalid_input');
    expectStoreError(await constructionError(null as unknown as PostgresTaskStoreOptions), 'invalid_input');
  });

  test('neither pool nor connectionString is refused with invalid_input', async () => {
    expectStoreError(await constructionError({}), 'invalid_input');
    expectStoreError(await constructionError({ schema: 'mcp_tasks' }), 'invalid_input');
    expectStoreError(await constructionError({ connectionString: '' }), 'invalid_input');
  });

  test.each<[string, { intervalMs?: number; tombstoneRetentionMs?: number; historyRetentionMs?: number; batchSize?: number }]>([
    ['batchSize 0', { batchSize: 0 }],
    ['batchSize -1', { batchSize: -1 }],
    ['batchSize 1.5', { batchSize: 1.5 }],
    ['intervalMs -1', { intervalMs: -1 }],
    ['intervalMs NaN', { intervalMs: Number.NaN }],
    // Past what setTimeout takes: Node would fire it at once, and every millisecond after.
    ['intervalMs 2^31', { intervalMs: 2 ** 31 }],
    ['batchSize past 1,000,000', { batchSize: 1_000_001 }],
    ['tombstoneRetentionMs -1', { tombstoneRetentionMs: -1 }],
    ['tombstoneRetentionMs NaN', { tombstoneRetentionMs: Number.NaN }],
    ['tombstoneRetentionMs past what PostgreSQL can subtract from now()', { tombstoneRetentionMs: Number.MAX_SAFE_INTEGER }],
    ['historyRetentionMs -1', { historyRetentionMs: -1 }],
    ['historyRetentionMs 1.5', { historyRetentionMs: 1.5 }],
    ['historyRetentionMs NaN', { historyRetentionMs: Number.NaN }],
    ['historyRetentionMs past what PostgreSQL can subtract from now()', { historyRetentionMs: Number.MAX_SAFE_INTEGER }],
  ])('reaper %s is refused with invalid_input', async (_, reaper) => {
    const error = await constructionError({ pool: resources.admin, listen: false, reaper });
    expectStoreError(error, 'invalid_input');
  });

  test('valid options are accepted, with the default ttl applied', async () => {
    const schema = await freshSchema();
    const store = openStore({ pool: resources.admin, schema, defaultTtlMs: 12_345, limits: { maxPayloadBytes: 1000, maxTasksPerOwner: 5 } });
    const { taskId } = await store.createTask({ toolName: 'defaults' });
    expect((await store.getTask(taskId))?.ttlMs).toBe(12_345);
  });

  test('the largest reaper interval and batch are accepted', async () => {
    const schema = await freshSchema();
    const store = openStore({ pool: resources.admin, schema, listen: false, reaper: { intervalMs: 2 ** 31 - 1, batchSize: 1_000_000 } });
    expect(await store.reapExpired()).toEqual({ tombstoned: 0, purged: 0 });
  });
});

// -- close() ------------------------------------------------------------------------------------

describe('close', () => {
  test('leaves a caller-owned pool usable', async () => {
    const schema = await freshSchema();
    const pool = createPool(database.connectionString, 3);
    try {
      const store = new PostgresTaskStore({ pool, schema, reaper: { intervalMs: 60_000 } });
      await store.createTask({ toolName: 'before-close' });
      await store.close();
      expect(pool.ended).toBe(false);
      const { rows } = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${schema}.tasks`);
      expect(rows).toEqual([{ n: 1 }]);
    } finally {
      await pool.end();
    }
  });

  test('ends a pool the store owns: none of its connections remain', async () => {
    const schema = await freshSchema();
    const probe = `owned_pool_probe_${schemas}`;
    const url = new URL(database.connectionString);
    url.searchParams.set('application_name', probe);
    const store = new PostgresTaskStore({ connectionString: url.toString(), schema, reaper: { intervalMs: 60_000 } });
    const listening = new Promise<void>((resolve) =>
      store.onListenerStateChange(({ state }) => state === 'listening' && resolve()),
    );
    await within('the listener', listening);
    await Promise.all([1, 2, 3].map(() => store.createTask({ toolName: 'parallel' })));

    const connections = async () => {
      const { rows } = await resources.admin.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE datname = current_database() AND application_name IN ($1, 'mcp-task-store-listener')`,
        [probe],
      );
      return rows[0]!.n;
    };
    expect(await connections()).toBeGreaterThanOrEqual(2);
    await store.close();
    await eventually('every connection of the store closing', async () => (await connections()) === 0);
  });

  test('a pending waitForCompletion rejects with a backend error when the store closes', async () => {
    const schema = await freshSchema();
    const store = new PostgresTaskStore({ pool: resources.admin, schema, reaper: false });
    openStores.push(store);
    const { taskId } = await store.createTask({ toolName: 'waited' });
    const waiting = store.waitForCompletion(taskId);
    await eventually('the waiter registering', async () => {
      const { rows } = await resources.admin.query(`SELECT awaited FROM ${schema}.tasks WHERE task_id = $1`, [taskId]);
      return rows[0]?.awaited === true;
    });
    const outcome = rejection('the pending wait', waiting);
    await store.close();
    expectStoreError(await outcome, 'backend');
    // The task itself lives on.
    const { rows } = await resources.admin.query(`SELECT status FROM ${schema}.tasks WHERE task_id = $1`, [taskId]);
    expect(rows).toEqual([{ status: 'working' }]);
  });

  test('close() twice, or twice at once, is harmless', async () => {
    const schema = await freshSchema();
    const owned = new PostgresTaskStore({ connectionString: database.connectionString, schema, reaper: { intervalMs: 50 } });
    await owned.createTask({ toolName: 'x' });
    await expect(Promise.all([owned.close(), owned.close()])).resolves.toBeDefined();
    await expect(owned.close()).resolves.toBeUndefined();

    const borrowed = new PostgresTaskStore({ pool: resources.admin, schema, reaper: false });
    await borrowed.close();
    await expect(borrowed.close()).resolves.toBeUndefined();
    expect((await resources.admin.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
  });
});

// -- Bad input changes nothing ------------------------------------------------------------------

describe('bad input', () => {
  test('calls refused with invalid_input or invalid_transition leave the row, its requests and its history unchanged', async () => {
    const schema = await freshSchema();
    const store = openStore({ pool: resources.admin, schema });
    const { taskId: id } = await store.createTask({ toolName: 'guarded', arguments: { a: 1 }, owner: 'erin' });
    await store.setTaskMeta(id, { m: 1 });
    await store.requireInput(id, { answered: { method: 'roots/list' } }, 'first question');
    await store.applyInputResponses(id, { answered: { roots: [] } });
    await store.requireInput(id, { open: { method: 'roots/list' } }, 'second question');

    const snapshot = async () => ({
      task: (await resources.admin.query(`SELECT to_jsonb(t) AS row FROM ${schema}.tasks AS t WHERE task_id = $1`, [id])).rows,
      requests: (
        await resources.admin.query(`SELECT to_jsonb(r) AS row FROM ${schema}.input_requests AS r WHERE task_id = $1 ORDER BY request_key`, [id])
      ).rows,
      history: (await resources.admin.query(`SELECT to_jsonb(h) AS row FROM ${schema}.task_history AS h WHERE task_id = $1 ORDER BY id`, [id])).rows,
      tombstones: (await resources.admin.query(`SELECT count(*)::int AS n FROM ${schema}.tombstones`)).rows,
    });
    const before = await snapshot();
    expect(before.task).toHaveLength(1);
    expect(before.requests).toHaveLength(2);

    const bad = <T>(value: unknown) => value as T;
    const refused: [string, TaskStoreErrorKind, () => Promise<unknown>][] = [
      ['setStatus to an unknown status', 'invalid_input', () => store.setStatus(id, bad('paused'))],
      ['setStatus with a NUL in the message', 'invalid_input', () => store.setStatus(id, 'working', 'a\u0000b')],
      ['setStatus to a terminal status', 'invalid_transition', () => store.setStatus(id, 'completed')],
      ['completeTask with content not an array', 'invalid_input', () => store.completeTask(id, bad({ content: 'text' }))],
      ['failTask with a fractional code', 'invalid_input', () => store.failTask(id, { code: 1.5, message: 'x' })],
      ['failTask with an extra field', 'invalid_input', () => store.failTask(id, bad({ code: 1, message: 'x', extra: 1 }))],
      ['requireInput with an unknown method', 'invalid_input', () => store.requireInput(id, bad({ k: { method: 'tools/call' } }))],
      ['requireInput with an empty key', 'invalid_input', () => store.requireInput(id, { '': { method: 'roots/list' } })],
      [
        'requireInput reusing an answered key for another request',
        'invalid_transition',
        () => store.requireInput(id, { answered: { method: 'elicitation/create', params: { message: 'again?' } } }),
      ],
      ['applyInputResponses with a non-object answer', 'invalid_input', () => store.applyInputResponses(id, bad({ open: 'yes' }))],
      ['setTaskMeta with an array', 'invalid_input', () => store.setTaskMeta(id, bad([1, 2]))],
      ['setTaskMeta with a circular value', 'invalid_input', () => {
        const meta: Record<string, unknown> = {};
        meta.self = meta;
        return store.setTaskMeta(id, meta);
      }],
      ['setTtl negative', 'invalid_input', () => store.setTtl(id, -1)],
      ['setTtl fractional', 'invalid_input', () => store.setTtl(id, 10.5)],
      ['cancelTask with a numeric reason', 'invalid_input', () => store.cancelTask(id, bad(42))],
      ['discardTask with a numeric id', 'invalid_input', () => store.discardTask(bad(42))],
      ['listTasks with limit 0', 'invalid_input', () => store.listTasks({ limit: 0 })],
    ];
    for (const [name, kind, call] of refused) {
      const error = await failureOf(name, call);
      expect(error, name).toBeInstanceOf(TaskStoreError);
      expect((error as TaskStoreError).kind, `${name}: ${(error as Error).message}`).toBe(kind);
    }
    expect(await snapshot()).toEqual(before);
    expect(await store.outstandingInputRequests(id)).toEqual({ open: { method: 'roots/list' } });
    expect((await store.getTask(id))?.status).toBe('input_required');
  });
});
