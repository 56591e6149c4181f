/**
 * The reaper of PostgresTaskStore: expired rows become tombstones (owner and id kept, content
 * gone), tombstones are purged after their retention window (the history stays: its own phase is
 * tested in postgres-history.test.ts), concurrent reapers never tombstone a row twice, and a pass
 * never waits on a row that live traffic holds.
 *
 * Every test works in a schema of its own, so counts returned by a pass are exact.
 */
import { Kysely, PostgresDialect } from 'kysely';
import { describe, expect, test } from 'vitest';
import {
  migrate,
  PostgresTaskStore,
  TaskStoreError,
  type PostgresTaskStoreOptions,
  type ReaperPass,
} from '../src/index.js';
import { createPool, dialectPool } from '../src/postgres/pool.js';
import { Reaper, type ReaperBatch, type ReaperOptions } from '../src/postgres/reaper.js';
import { notificationChannel, quoteIdentifier } from '../src/postgres/schema-name.js';
import { storeDatabase, type TaskDatabase } from '../src/postgres/tables.js';
import { useTestResources } from './support/postgres-stores.js';
import { useTestDatabase } from './support/test-database.js';
import { eventually, sleep, within } from './support/time.js';

const database = useTestDatabase();
/** An automatic interval long enough that only the start-up pass ever runs during a test. */
const HOUR_MS = 3_600_000;

const resources = useTestResources(database);
const openStores = resources.stores;
let schemas = 0;

// -- Helpers ------------------------------------------------------------------------------------

async function freshSchema(): Promise<string> {
  const schema = `reaper_${++schemas}`;
  await migrate({ pool: resources.admin, schema });
  return schema;
}

/**
 * A store on `schema`, closed after the test. With an automatic reaper, resolves once its
 * start-up pass has finished, so the counts of later passes are the test's alone.
 */
async function openStore(
  schema: string,
  options: Omit<PostgresTaskStoreOptions, 'schema'> = {},
): Promise<PostgresTaskStore> {
  const store = new PostgresTaskStore({ pool: resources.admin, ...options, schema });
  openStores.push(store);
  if (options.reaper !== false) {
    const firstPass = new Promise((resolve) => store.onReaperPass(resolve));
    await within('the start-up reaper pass', firstPass);
  }
  return store;
}

async function count(schema: string, table: string, taskId?: string): Promise<number> {
  const { rows } = await resources.admin.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM ${schema}.${table}${taskId === undefined ? '' : ' WHERE task_id = $1'}`,
    taskId === undefined ? [] : [taskId],
  );
  return rows[0]!.n;
}

/**
 * Inserts `n` tasks that expired 9 s ago (well inside the default tombstone retention), in one statement. The rows satisfy every CHECK of
 * the tasks table: 32 hex ids, a known status, ttl_ms and expires_at both set.
 */
async function insertExpiredTasks(schema: string, n: number): Promise<void> {
  await resources.admin.query(
    `INSERT INTO ${schema}.tasks
       (task_id, owner, tool_name, arguments, status, status_message,
        created_at, last_updated_at, ttl_ms, expires_at)
     SELECT md5(random()::text || i), 'bulk-owner', 'bulk', jsonb_build_object('i', i), 'working', 'Task started',
            now() - interval '10 seconds', now() - interval '10 seconds', 1000, now() - interval '9 seconds'
       FROM generate_series(1, $1::int) AS i`,
    [n],
  );
}

/** Collects every pass the store reports from now on. */
function recordPasses(store: PostgresTaskStore): { passes: (ReaperPass | Error)[]; stop: () => void } {
  const passes: (ReaperPass | Error)[] = [];
  const stop = store.onReaperPass((outcome) => passes.push(outcome));
  return { passes, stop };
}

/** Resolves once the store reports a pass for which `predicate` holds. */
function passWhere(store: PostgresTaskStore, predicate: (outcome: ReaperPass | Error) => boolean): Promise<ReaperPass | Error> {
  return new Promise((resolve) => {
    const stop = store.onReaperPass((outcome) => {
      if (!predicate(outcome)) return;
      stop();
      resolve(outcome);
    });
  });
}

function waitUntilListening(store: PostgresTaskStore): Promise<void> {
  return new Promise((resolve) => {
    const stop = store.onListenerStateChange(({ state }) => {
      if (state !== 'listening') return;
      stop();
      resolve();
    });
  });
}

// -- Tombstones and purging ---------------------------------------------------------------------

describe('tombstones', () => {
  test('a task past its ttl reads expired before and after the pass that tombstones it, and missing once purged', async () => {
    const schema = await freshSchema();
    const store = await openStore(schema, { reaper: { intervalMs: HOUR_MS } });
    const purger = await openStore(schema, { reaper: { intervalMs: HOUR_MS, tombstoneRetentionMs: 0 } });

    const { taskId, token } = await store.createTask({ toolName: 'short', ttlMs: 100, owner: 'alice' });
    expect(await store.taskPresence(taskId)).toEqual({ state: 'present', owner: 'alice' });
    await within('expiry raising the token', token.whenCancelled());

    // Expired on the database clock, with no reaper pass yet: the live row is still there.
    expect(await count(schema, 'tasks', taskId)).toBe(1);
    expect(await store.taskPresence(taskId)).toEqual({ state: 'expired', owner: 'alice' });
    expect(await store.getTask(taskId)).toBeNull();
    expect(await store.taskOwner(taskId)).toBeNull();

    // The default retention keeps the tombstone.
    expect(await store.reapExpired()).toEqual({ tombstoned: 1, purged: 0 });
    expect(await count(schema, 'tasks', taskId)).toBe(0);
    expect(await count(schema, 'tombstones', taskId)).toBe(1);
    expect(await store.taskPresence(taskId)).toEqual({ state: 'expired', owner: 'alice' });
    expect(await purger.taskPresence(taskId)).toEqual({ state: 'expired', owner: 'alice' });
    expect(await store.getTask(taskId)).toBeNull();

    // A second pass under the same retention finds nothing to do.
    expect(await store.reapExpired()).toEqual({ tombstoned: 0, purged: 0 });

    // Retention 0: the next pass purges the tombstone.
    expect(await purger.reapExpired()).toEqual({ tombstoned: 0, purged: 1 });
    expect(await count(schema, 'tombstones', taskId)).toBe(0);
    expect(await store.taskPresence(taskId)).toEqual({ state: 'missing' });
    expect(await purger.reapExpired()).toEqual({ tombstoned: 0, purged: 0 });
  });

  test('with a retention of 0 one pass tombstones and purges', async () => {
    const schema = await freshSchema();
    const store = await openStore(schema, { reaper: { intervalMs: HOUR_MS, tombstoneRetentionMs: 0 } });
    const { taskId } = await store.createTask({ toolName: 'instant', ttlMs: 0, owner: '' });
    expect(await store.taskPresence(taskId)).toEqual({ state: 'expired', owner: '' });
    expect(await store.reapExpired()).toEqual({ tombstoned: 1, purged: 1 });
    expect(await store.taskPresence(taskId)).toEqual({ state: 'missing' });
    expect(await count(schema, 'tasks', taskId)).toBe(0);
    expect(await count(schema, 'tombstones', taskId)).toBe(0);
  });

  test('a pass leaves live tasks and tasks that never expire alone', async () => {
    const schema = await freshSchema();
    const store = await openStore(schema, { reaper: { intervalMs: HOUR_MS, tombstoneRetentionMs: 0 } });
    const live = await store.createTask({ toolName: 'live', ttlMs: 60_000 });
    const forever = await store.createTask({ toolName: 'forever', ttlMs: null });
    const done = await store.createTask({ toolName: 'done', ttlMs: 60_000 });
    await store.completeTask(done.taskId, { content: [] });
    const expired = await store.createTask({ toolName: 'expired', ttlMs: 0 });

    expect(await store.reapExpired()).toEqual({ tombstoned: 1, purged: 1 });
    expect(await store.taskPresence(expired.taskId)).toEqual({ state: 'missing' });
    for (const { taskId } of [live, forever, done]) {
      expect(await store.taskPresence(taskId)).toEqual({ state: 'present', owner: null });
    }
    expect((await store.getTaskResult(done.taskId))?.result).toEqual({ content: [] });
    expect(live.token.isCancelled).toBe(false);
    expect(forever.token.isCancelled).toBe(false);
  });

  test('a tombstone keeps the task id and owner and nothing else; input requests, session, messages and lease go with the row, history outlives the purge', async () => {
    const schema = await freshSchema();
    const store = await openStore(schema, { reaper: { intervalMs: HOUR_MS } });
    const purger = await openStore(schema, { reaper: { intervalMs: HOUR_MS, tombstoneRetentionMs: 0 } });

    const { taskId } = await store.createTask({
      toolName: 'visible-tool', // history names the tool, by design
      arguments: { secret: 'secret-arguments' },
      owner: 'bob',
      ttlMs: 60_000,
      pollIntervalMs: 250,
    });
    await store.setTaskMeta(taskId, { note: 'secret-meta' });
    await store.requireInput(taskId, { first: { method: 'elicitation/create', params: { message: 'secret-question' } } });
    await store.applyInputResponses(taskId, { first: { action: 'accept', content: { answer: 'secret-answer' } } });
    await store.requireInput(taskId, { second: { method: 'roots/list' } });
    await store.requireInput(taskId, { third: { method: 'roots/list' } }); // supersedes "second"
    expect(await count(schema, 'input_requests', taskId)).toBe(3);
    // What the SDK integration keeps beside a task.
    await resources.admin.query(`INSERT INTO ${schema}.task_sessions (task_id, session_id, created_at) VALUES ($1, 'session-1', now())`, [taskId]);
    await resources.admin.query(`INSERT INTO ${schema}.task_messages (task_id, session_id, message) VALUES ($1, 'session-1', '{"text": "secret-message"}')`, [taskId]);
    // A runner's lease, as the MCP integrations take one.
    await resources.admin.query(
      `INSERT INTO ${schema}.task_leases (task_id, runner_id, expires_at, acquired_at, lost_status) VALUES ($1, 'host:1:run', now() + interval '1 minute', now(), 'secret-progress')`,
      [taskId],
    );
    const historyBefore = await count(schema, 'task_history', taskId);
    expect(historyBefore).toBeGreaterThanOrEqual(3);

    const { rows: created } = await resources.admin.query<{ created_at: Date }>(
      `SELECT created_at FROM ${schema}.tasks WHERE task_id = $1`,
      [taskId],
    );
    // ttl 0 measured from creation: expired at once.
    expect(await store.setTtl(taskId, 0)).toBe(true);
    expect(await store.reapExpired()).toEqual({ tombstoned: 1, purged: 0 });

    expect(await count(schema, 'tasks', taskId)).toBe(0);
    expect(await count(schema, 'input_requests', taskId)).toBe(0);
    expect(await count(schema, 'task_sessions', taskId)).toBe(0);
    expect(await count(schema, 'task_messages', taskId)).toBe(0);
    expect(await count(schema, 'task_leases', taskId)).toBe(0);
    const { rows: tombstones } = await resources.admin.query<{ row: Record<string, unknown> }>(
      `SELECT to_jsonb(t) AS row FROM ${schema}.tombstones AS t WHERE task_id = $1`,
      [taskId],
    );
    expect(tombstones).toHaveLength(1);
    const tombstone = tombstones[0]!.row;
    expect(Object.keys(tombstone).sort()).toEqual(['expired_at', 'owner', 'task_id', 'tombstoned_at']);
    expect(tombstone.task_id).toBe(taskId);
    expect(tombstone.owner).toBe('bob');
    expect(new Date(tombstone.expired_at as string).getTime()).toBe(created[0]!.created_at.getTime());
    expect(new Date(tombstone.tombstoned_at as string).getTime()).toBeGreaterThanOrEqual(created[0]!.created_at.getTime());
    const { rows: columns } = await resources.admin.query<{ column_name: string }>(
      `SELECT column_name FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'tombstones' ORDER BY column_name`,
      [schema],
    );
    expect(columns.map((c) => c.column_name)).toEqual(['expired_at', 'owner', 'task_id', 'tombstoned_at']);

    // No table of the schema holds any of the task's content any more.
    const { rows: tables } = await resources.admin.query<{ table_name: string }>(
      `SELECT table_name FROM information_schema.tables WHERE table_schema = $1`,
      [schema],
    );
    for (const { table_name } of tables) {
      const { rows } = await resources.admin.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM ${schema}.${table_name} AS t WHERE to_jsonb(t)::text LIKE '%secret-%'`,
      );
      expect(rows[0]!.n, `rows of ${table_name} mentioning the payload`).toBe(0);
    }

    // History is kept with the tombstone and after its purge, for its own retention (7 days).
    expect(await count(schema, 'task_history', taskId)).toBe(historyBefore);
    expect(await purger.reapExpired()).toEqual({ tombstoned: 0, purged: 1 });
    expect(await count(schema, 'tombstones', taskId)).toBe(0);
    expect(await count(schema, 'task_history', taskId)).toBe(historyBefore);
    expect(await store.taskPresence(taskId)).toEqual({ state: 'missing' });
  });

  test('a purge leaves the history of every task alone, purged or live', async () => {
    const schema = await freshSchema();
    const store = await openStore(schema, { reaper: { intervalMs: HOUR_MS, tombstoneRetentionMs: 0 } });
    const live = await store.createTask({ toolName: 'live', ttlMs: 60_000 });
    await store.setStatus(live.taskId, 'input_required', 'a question');
    const expired = await store.createTask({ toolName: 'expired', ttlMs: 0 });
    expect(await count(schema, 'task_history', live.taskId)).toBe(2);

    expect(await store.reapExpired()).toEqual({ tombstoned: 1, purged: 1 });
    expect(await count(schema, 'tombstones', expired.taskId)).toBe(0);
    expect(await count(schema, 'task_history', expired.taskId)).toBe(1);
    expect(await count(schema, 'task_history', live.taskId)).toBe(2);
  });
});

// -- Concurrency --------------------------------------------------------------------------------

describe('concurrent reapers', () => {
  test('two instances reaping 3,000 expired rows at once tombstone each row exactly once', async () => {
    const schema = await freshSchema();
    // Separate pools, as on two servers; batches of 100 so the passes interleave over 30 batches.
    const reaperOptions = { intervalMs: HOUR_MS, batchSize: 100 };
    const a = new PostgresTaskStore({ connectionString: database.connectionString, schema, reaper: reaperOptions, listen: false });
    const b = new PostgresTaskStore({ connectionString: database.connectionString, schema, reaper: reaperOptions, listen: false });
    const startUp = Promise.all([a, b].map((store) => new Promise((resolve) => store.onReaperPass(resolve))));
    openStores.push(a, b);
    await within('the start-up passes', startUp);

    await insertExpiredTasks(schema, 3000);
    expect(await count(schema, 'tasks')).toBe(3000);

    const [fromA, fromB] = await within('two concurrent passes', Promise.all([a.reapExpired(), b.reapExpired()]), 20_000);
    expect(fromA.tombstoned + fromB.tombstoned).toBe(3000);
    expect(fromA.purged + fromB.purged).toBe(0);
    expect(await count(schema, 'tasks')).toBe(0);
    expect(await count(schema, 'tombstones')).toBe(3000);
    const { rows } = await resources.admin.query<{ owners: string[] }>(
      `SELECT array_agg(DISTINCT owner) AS owners FROM ${schema}.tombstones`,
    );
    expect(rows[0]!.owners).toEqual(['bulk-owner']);
    // Nothing left for either of them.
    expect(await a.reapExpired()).toEqual({ tombstoned: 0, purged: 0 });
    expect(await b.reapExpired()).toEqual({ tombstoned: 0, purged: 0 });
  });

  test('a pass still tombstones the expired rows while another instance’s pass is busy deleting history', async () => {
    const schema = await freshSchema();
    const tombstoner = await openStore(schema, { reaper: { intervalMs: HOUR_MS, batchSize: 100 } });
    const purger = await openStore(schema, { reaper: { intervalMs: HOUR_MS, batchSize: 100, historyRetentionMs: 0 } });

    // The timeline of a task long gone, whose second row another transaction holds: the purger's
    // pass gets as far as deleting that timeline and waits there, inside its history phase.
    const stuck = 'f'.repeat(32);
    await resources.admin.query(
      `INSERT INTO ${schema}.task_history (task_id, tool_name, owner, at, from_status, to_status, message)
       VALUES ($1, 'gone', NULL, now() - interval '1 second', NULL, 'working', NULL),
              ($1, 'gone', NULL, now(), 'working', 'completed', NULL)`,
      [stuck],
    );
    const blocker = await resources.client();
    await blocker.query('BEGIN');
    await blocker.query(`SELECT 1 FROM ${schema}.task_history WHERE task_id = $1 AND from_status IS NOT NULL FOR UPDATE`, [stuck]);
    const purging = purger.reapExpired();
    await eventually('the purger waiting inside its history phase', async () => {
      const { rows } = await resources.admin.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%task_history%'`,
      );
      return rows[0]!.n > 0;
    });

    // Expired rows appear after the purger's tombstone phase ended: only the other pass can take them.
    await insertExpiredTasks(schema, 3000);
    const tombstoning = tombstoner.reapExpired();
    // Give that pass time to finish, whether it works alongside the purger or waits for it.
    await Promise.race([tombstoning.catch(() => {}), sleep(1500)]);
    await blocker.query('COMMIT');
    const [fromTombstoner, fromPurger] = await within('both passes', Promise.all([tombstoning, purging]), 20_000);

    // Neither pass may end with expired rows left that nobody is reaping.
    expect(fromTombstoner.tombstoned + fromPurger.tombstoned).toBe(3000);
    expect(await count(schema, 'tasks')).toBe(0);
    expect(await count(schema, 'task_history', stuck)).toBe(0);
  });

  test('a reaped task is not announced: a token on another instance is raised by its own deadline; a discard is announced', async () => {
    const schema = await freshSchema();
    const holder = new PostgresTaskStore({ pool: resources.admin, schema, reaper: false });
    openStores.push(holder);
    await within('the holder listening', waitUntilListening(holder));
    const reaper = await openStore(schema, { reaper: { intervalMs: HOUR_MS } });
    const announcements: string[] = [];
    const client = await resources.client();
    client.on('notification', ({ payload }) => announcements.push(payload ?? ''));
    await client.query(`LISTEN ${quoteIdentifier(notificationChannel(schema))}`);

    const expiring = await holder.createTask({ toolName: 'held', ttlMs: 300, owner: 'carol' });
    const kept = await holder.createTask({ toolName: 'held', owner: 'carol' });
    await within('the held token being raised at its deadline', expiring.token.whenCancelled());
    expect(expiring.token.signal.reason).toBe('expired');
    expect(await reaper.reapExpired()).toEqual({ tombstoned: 1, purged: 0 });
    expect(await holder.taskPresence(expiring.taskId)).toEqual({ state: 'expired', owner: 'carol' });

    // NOTIFYs arrive in commit order: once the discard's is here, the reap's would have come first.
    expect(await reaper.discardTask(kept.taskId)).toBe(true);
    await eventually('the discard announced', async () => announcements.includes(`deleted:${kept.taskId}`));
    expect(announcements).not.toContain(`deleted:${expiring.taskId}`);
  });

  test('a pass skips a row that another transaction holds locked, without waiting; the next pass takes it', async () => {
    const schema = await freshSchema();
    const store = await openStore(schema, { reaper: { intervalMs: HOUR_MS } });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await store.createTask({ toolName: 'expired', ttlMs: 0 })).taskId);
    const locked = ids[2]!;

    const client = await resources.client();
    await client.query('BEGIN');
    await client.query(`SELECT * FROM ${schema}.tasks WHERE task_id = $1 FOR UPDATE`, [locked]);

    // Completing while the lock is still held is the point: a pass that waited for the row could not.
    const startedAt = performance.now();
    const first = await within('a pass while a row is locked', store.reapExpired());
    const elapsedMs = performance.now() - startedAt;
    expect(first).toEqual({ tombstoned: 4, purged: 0 });
    // SKIP LOCKED: no lock wait at all, so well under the reaper's 1 s lock_timeout.
    expect(elapsedMs).toBeLessThan(1000);
    expect(await count(schema, 'tasks')).toBe(1);
    expect(await count(schema, 'tasks', locked)).toBe(1);
    expect(await count(schema, 'tombstones')).toBe(4);
    expect(await count(schema, 'tombstones', locked)).toBe(0);

    await client.query('COMMIT');
    expect(await store.reapExpired()).toEqual({ tombstoned: 1, purged: 0 });
    expect(await count(schema, 'tasks')).toBe(0);
    expect(await count(schema, 'tombstones', locked)).toBe(1);
  });

  /** Runs `body` with a Reaper of its own on `schema`, over a pool of two connections. */
  async function withReaper<T>(schema: string, options: ReaperOptions, body: (reaper: Reaper) => Promise<T>): Promise<T> {
    const pool = createPool(database.connectionString, 2);
    const db = new Kysely<TaskDatabase>({ dialect: new PostgresDialect({ pool: dialectPool(pool, { preparedStatements: true }) }) });
    try {
      return await body(new Reaper(storeDatabase(db, schema), options));
    } finally {
      await db.destroy();
    }
  }

  /** When the transaction of the statement that backend `blockerPid` holds up began; null while none waits on it. */
  async function blockedSince(blockerPid: number): Promise<Date | null> {
    const { rows } = await resources.admin.query<{ xact_start: Date }>(
      'SELECT xact_start FROM pg_stat_activity WHERE $1::int = ANY(pg_blocking_pids(pid))',
      [blockerPid],
    );
    return rows[0]?.xact_start ?? null;
  }

  test.each([
    ['gives up on a lock (lock_timeout)', async (_blockerPid: number) => {}],
    ['is cancelled (pg_cancel_backend, query_canceled)', async (blockerPid: number) => {
      await resources.admin.query('SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE $1::int = ANY(pg_blocking_pids(pid))', [blockerPid]);
    }],
  ])('a batch that %s is retried at half the size, and the size grows back once batches commit', async (_, interrupt) => {
    const schema = await freshSchema();
    await insertExpiredTasks(schema, 399);
    // The oldest expiry, so every batch includes it: its tombstone's key is taken by an open
    // transaction, so inserting it waits for that transaction.
    const { rows: [first] } = await resources.admin.query<{ task_id: string }>(
      `INSERT INTO ${schema}.tasks (task_id, tool_name, arguments, status, status_message, created_at, last_updated_at, ttl_ms, expires_at)
       VALUES (md5('first'), 'bulk', '{}', 'working', 'Task started', now() - interval '1 minute', now() - interval '1 minute', 1000,
               now() - interval '1 minute' + interval '1 second')
       RETURNING task_id`,
    );
    const blocker = await resources.client();
    await blocker.query('BEGIN');
    await blocker.query(`INSERT INTO ${schema}.tombstones (task_id, owner, expired_at) VALUES ($1, NULL, now())`, [first!.task_id]);
    const blockerPid = (await blocker.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;

    await withReaper(schema, { batchSize: 200 }, async (reaper) => {
      const batches: number[] = [];
      reaper.onBatch(({ phase, rows }) => phase === 'tombstone' && batches.push(rows));
      const pass = reaper.runOnce();
      let firstTry: Date | null = null;
      await eventually('the first batch waiting for the row', async () => (firstTry = await blockedSince(blockerPid)) !== null);
      await interrupt(blockerPid);
      // The lock timeout is 1 s; released once the retry waits in a transaction of its own.
      await eventually('the batch retried', async () => ((await blockedSince(blockerPid)) ?? firstTry)!.getTime() !== firstTry!.getTime(), 5000);
      expect(batches).toEqual([]);
      await blocker.query('ROLLBACK');
      expect((await within('the pass', pass, 20_000)).tombstoned).toBe(400);
      // Half of 200, then doubling after each commit, up to batchSize (a batch may take fewer rows
      // than its size: it reaps the pages of the rows it found, see tombstoneBatch).
      expect(batches[0]).toBe(100);
      expect(Math.max(...batches.slice(1))).toBeGreaterThan(100);
      expect(Math.max(...batches)).toBeLessThanOrEqual(200);
      expect(batches.reduce((sum, rows) => sum + rows, 0)).toBe(400);
    });
  });

  test('onBatch reports every committed batch of every phase, until unsubscribed', async () => {
    const schema = await freshSchema();
    await insertExpiredTasks(schema, 5);
    await withReaper(schema, { batchSize: 2 }, async (reaper) => {
      const kept: ReaperBatch[] = [];
      const dropped: ReaperBatch[] = [];
      reaper.onBatch((batch) => kept.push(batch));
      const unsubscribe = reaper.onBatch((batch) => dropped.push(batch));
      unsubscribe();
      expect(await reaper.runOnce()).toEqual({ tombstoned: 5, purged: 0, historyPurged: 0 });
      expect(kept).toEqual([
        { phase: 'tombstone', rows: 2 },
        { phase: 'tombstone', rows: 2 },
        { phase: 'tombstone', rows: 1 },
        { phase: 'purge', rows: 0 },
        { phase: 'history', rows: 0 },
      ]);
      expect(dropped).toEqual([]);
    });
  });

  test('expired rows scattered among live ones, in random expiry order: every expired row goes, oldest first, and no live one', async () => {
    const schema = await freshSchema();
    // Rows lie in creation order and expire in random order; every third one is still live.
    await resources.admin.query(
      `INSERT INTO ${schema}.tasks
         (task_id, owner, tool_name, arguments, status, status_message, created_at, last_updated_at, ttl_ms, expires_at)
       SELECT md5('scattered ' || i), NULL, CASE WHEN i % 3 = 0 THEN 'live' ELSE 'expired' END, '{}', 'working', 'Task started',
              now() - interval '1 hour', now() - interval '1 hour', 1,
              CASE WHEN i % 3 = 0 THEN now() + interval '1 hour' ELSE now() - random() * interval '30 minutes' END
         FROM generate_series(1, 3000) AS i`,
    );
    const { rows: oldest } = await resources.admin.query<{ task_id: string }>(
      `SELECT task_id FROM ${schema}.tasks WHERE expires_at <= now() ORDER BY expires_at LIMIT 5`,
    );
    await withReaper(schema, { batchSize: 100 }, async (reaper) => {
      const batches: number[] = [];
      let firstBatchTookOldest: boolean | undefined;
      reaper.onBatch(({ phase, rows }) => phase === 'tombstone' && batches.push(rows));
      const firstBatch = new Promise<void>((resolve) => {
        const stop = reaper.onBatch(() => {
          stop();
          void resources.admin
            .query(`SELECT count(*)::int AS n FROM ${schema}.tombstones WHERE task_id = ANY($1)`, [oldest.map((row) => row.task_id)])
            .then(({ rows }) => (firstBatchTookOldest = rows[0].n === oldest.length))
            .finally(resolve);
        });
      });
      expect((await reaper.runOnce()).tombstoned).toBe(2000);
      await firstBatch;
      expect(firstBatchTookOldest, 'the first batch took the five oldest expiries').toBe(true);
      expect(batches.reduce((sum, rows) => sum + rows, 0)).toBe(2000);
      expect(Math.max(...batches)).toBeLessThanOrEqual(100);
    });
    expect(await count(schema, 'tasks')).toBe(1000);
    const { rows } = await resources.admin.query(`SELECT DISTINCT tool_name FROM ${schema}.tasks`);
    expect(rows).toEqual([{ tool_name: 'live' }]);
  });

  test('with pacing, a backlog’s batches are spaced by that multiple of each batch’s own time; stop() ends a pause at once', async () => {
    const schema = await freshSchema();
    await insertExpiredTasks(schema, 3);
    await withReaper(schema, { batchSize: 1, pacing: 20 }, async (reaper) => {
      const started = performance.now();
      const ends: number[] = [];
      reaper.onBatch(({ phase }) => phase === 'tombstone' && ends.push(performance.now()));
      expect((await reaper.runOnce()).tombstoned).toBe(3);
      const firstBatch = ends[0]! - started;
      // A pause is at least its time; the batch after it adds its own.
      expect(ends[1]! - ends[0]!).toBeGreaterThanOrEqual(0.5 * 20 * firstBatch);
    });
    await insertExpiredTasks(schema, 3);
    await withReaper(schema, { batchSize: 1, pacing: 100 }, async (reaper) => {
      const started = performance.now();
      let pause = 0;
      let stopped: Promise<void> | undefined;
      reaper.onBatch(({ phase }) => {
        if (phase !== 'tombstone') return;
        pause = 100 * (performance.now() - started);
        setTimeout(() => (stopped ??= reaper.stop()), 10);
      });
      const pass = reaper.runOnce();
      await eventually('stop() called in the pause', async () => stopped !== undefined);
      const stopping = performance.now();
      await stopped;
      expect(performance.now() - stopping, 'stop() waited for the pause').toBeLessThan(pause / 4);
      expect((await pass).tombstoned).toBe(1);
    });
  });

  test('live transitions proceed while a reaper pass is stuck in the middle of a batch', async () => {
    const schema = await freshSchema();
    const store = await openStore(schema, { reaper: { intervalMs: HOUR_MS } });
    const live = await store.createTask({ toolName: 'live', ttlMs: 60_000 });
    const waiter = store.waitForCompletion(live.taskId);
    const expired = await store.createTask({ toolName: 'expired', ttlMs: 0 });

    // An uncommitted tombstone with the expired task's id: the pass deletes the live row, then its
    // INSERT into tombstones waits on this transaction, holding its batch's row locks meanwhile.
    const blocker = await resources.client();
    await blocker.query('BEGIN');
    await blocker.query(`INSERT INTO ${schema}.tombstones (task_id, owner, expired_at) VALUES ($1, NULL, now())`, [
      expired.taskId,
    ]);

    const blockerPid = (await blocker.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;

    let passDone = false;
    const pass = store.reapExpired().finally(() => (passDone = true));
    await eventually('the reaper waiting inside its batch', async () => (await blockedSince(blockerPid)) !== null);

    // Meanwhile a whole lifecycle of another task goes through.
    expect(await within('setStatus', store.setStatus(live.taskId, 'working', 'half way'))).toBe(true);
    expect(await within('completeTask', store.completeTask(live.taskId, { content: [{ type: 'text', text: 'ok' }] }))).toBe(true);
    const snapshot = await within('the waiter waking', waiter);
    expect(snapshot?.task.status).toBe('completed');
    const other = await within('createTask', store.createTask({ toolName: 'another', ttlMs: 60_000 }));
    expect(await within('getTask', store.getTask(other.taskId))).not.toBeNull();
    expect(passDone).toBe(false);

    await blocker.query('ROLLBACK');
    expect(await within('the pass after the blocker left', pass)).toEqual({ tombstoned: 1, purged: 0 });
    expect(await store.taskPresence(expired.taskId)).toEqual({ state: 'expired', owner: null });
    expect(await store.taskPresence(live.taskId)).toEqual({ state: 'present', owner: null });
  });
});

// -- The automatic reaper -----------------------------------------------------------------------

describe('the automatic reaper', () => {
  test('tombstones an expired task without reapExpired being called, and keeps running', async () => {
    const schema = await freshSchema();
    const store = await openStore(schema, { reaper: { intervalMs: 50 } });
    const { passes } = recordPasses(store);
    const reaped = passWhere(store, (outcome) => !(outcome instanceof Error) && outcome.tombstoned > 0);
    const { taskId } = await store.createTask({ toolName: 'expired', ttlMs: 0, owner: 'dave' });

    expect(await within('an automatic pass tombstoning the task', reaped)).toEqual({ tombstoned: 1, purged: 0, historyPurged: 0 });
    expect(await count(schema, 'tasks', taskId)).toBe(0);
    expect(await count(schema, 'tombstones', taskId)).toBe(1);
    expect(await store.taskPresence(taskId)).toEqual({ state: 'expired', owner: 'dave' });
    await eventually('three more automatic passes', async () => passes.length >= 4);
    expect(passes.every((outcome) => !(outcome instanceof Error))).toBe(true);
  });

  test('purges on its own too, after the retention window', async () => {
    const schema = await freshSchema();
    const store = await openStore(schema, { reaper: { intervalMs: 50, tombstoneRetentionMs: 200 } });
    const purged = passWhere(store, (outcome) => !(outcome instanceof Error) && outcome.purged > 0);
    const { taskId } = await store.createTask({ toolName: 'expired', ttlMs: 0 });
    await eventually('the tombstone', async () => (await count(schema, 'tombstones', taskId)) === 1);
    expect(await store.taskPresence(taskId)).toEqual({ state: 'expired', owner: null });
    await within('an automatic purge', purged);
    expect(await store.taskPresence(taskId)).toEqual({ state: 'missing' });
  });

  test('reaper: false runs no pass at all, not even at start-up; reapExpired() still works', async () => {
    const schema = await freshSchema();
    // Rows that any start-up pass would take.
    await insertExpiredTasks(schema, 3);
    const store = new PostgresTaskStore({ pool: resources.admin, schema, reaper: false });
    openStores.push(store);
    const { passes } = recordPasses(store);

    await sleep(300);
    expect(passes).toEqual([]);
    expect(await count(schema, 'tasks')).toBe(3);
    expect(await count(schema, 'tombstones')).toBe(0);

    expect(await store.reapExpired()).toEqual({ tombstoned: 3, purged: 0 });
    expect(passes).toEqual([{ tombstoned: 3, purged: 0, historyPurged: 0 }]);
    await sleep(100);
    expect(passes).toHaveLength(1);
  });

  test('the start-up pass of an enabled reaper takes the rows at once', async () => {
    const schema = await freshSchema();
    await insertExpiredTasks(schema, 3);
    const store = new PostgresTaskStore({ pool: resources.admin, schema, reaper: { intervalMs: HOUR_MS } });
    openStores.push(store);
    const firstPass = new Promise((resolve) => store.onReaperPass(resolve));
    expect(await within('the start-up pass', firstPass)).toEqual({ tombstoned: 3, purged: 0, historyPurged: 0 });
    expect(await count(schema, 'tasks')).toBe(0);
  });

  test('stops with close()', async () => {
    const schema = await freshSchema();
    const store = new PostgresTaskStore({ pool: resources.admin, schema, reaper: { intervalMs: 20 } });
    const { passes } = recordPasses(store);
    await eventually('a few automatic passes', async () => passes.length >= 3);
    await store.close();
    const afterClose = passes.length;
    await sleep(200);
    expect(passes).toHaveLength(afterClose);
    await expect(store.reapExpired()).rejects.toBeInstanceOf(TaskStoreError);
  });

  test('a store closed as its automatic pass ends starts no other pass', async () => {
    const schema = await freshSchema();
    const store = new PostgresTaskStore({ pool: resources.admin, schema, reaper: { intervalMs: 20 } });
    const passes: (ReaperPass | Error)[] = [];
    let closing: Promise<void> | undefined;
    store.onReaperPass((outcome) => {
      passes.push(outcome);
      closing ??= store.close();
    });
    await eventually('the start-up pass', async () => closing !== undefined);
    await closing;
    await sleep(200); // ten intervals
    expect(passes).toEqual([{ tombstoned: 0, purged: 0, historyPurged: 0 }]);
  });
});

describe('onReaperPass', () => {
  test('reports each pass with the counts it returned and the history it purged, until unsubscribed', async () => {
    const schema = await freshSchema();
    const store = await openStore(schema, {
      reaper: { intervalMs: HOUR_MS, tombstoneRetentionMs: 0, historyRetentionMs: 0 },
    });
    const first = recordPasses(store);
    const second = recordPasses(store);

    await store.createTask({ toolName: 'expired', ttlMs: 0 });
    await store.createTask({ toolName: 'expired', ttlMs: 0 });
    // reapExpired() keeps to the contract's two counts; the pass report adds the third.
    expect(await store.reapExpired()).toStrictEqual({ tombstoned: 2, purged: 2 });
    const pass = { tombstoned: 2, purged: 2, historyPurged: 2 };
    expect(first.passes).toEqual([pass]);
    expect(second.passes).toEqual([pass]);

    first.stop();
    expect(await store.reapExpired()).toStrictEqual({ tombstoned: 0, purged: 0 });
    expect(first.passes).toEqual([pass]);
    expect(second.passes).toEqual([pass, { tombstoned: 0, purged: 0, historyPurged: 0 }]);
  });

  test('reports a failed pass as an error, and the automatic reaper carries on until the schema is fixed', async () => {
    const schema = `reaper_${++schemas}`; // not migrated yet
    const store = new PostgresTaskStore({ pool: resources.admin, schema, reaper: { intervalMs: 50 }, listen: false });
    openStores.push(store);
    const { passes } = recordPasses(store);

    const failed = await within('a failed start-up pass', passWhere(store, () => true));
    expect(failed).toBeInstanceOf(Error);
    await expect(store.reapExpired()).rejects.toMatchObject({ name: 'TaskStoreError', kind: 'backend' });
    await eventually('another automatic pass failing', async () => passes.filter((p) => p instanceof Error).length >= 3);

    await migrate({ pool: resources.admin, schema });
    await insertExpiredTasks(schema, 2);
    const recovered = passWhere(store, (outcome) => !(outcome instanceof Error) && outcome.tombstoned > 0);
    expect(await within('a pass after the migration', recovered)).toEqual({ tombstoned: 2, purged: 0, historyPurged: 0 });
  });
});
