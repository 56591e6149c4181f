/**
 * Task history on PostgreSQL (migration 0004): every row names its task's tool and owner; the
 * history outlives the task, its tombstone and the tombstone's purge; the reaper's history phase
 * deletes whole timelines of tasks gone for good once their creation is older than
 * historyRetentionMs, in batches; discardTask takes a task's history at once; reaper_activity
 * records each phase. (The views that read it: postgres-history-views.test.ts.)
 *
 * Every test works in a schema of its own, so counts are exact.
 */
import { Kysely, PostgresDialect } from 'kysely';
import { describe, expect, test } from 'vitest';
import { PostgresTaskStore } from '../src/index.js';
import { createPool, dialectPool } from '../src/postgres/pool.js';
import { Reaper } from '../src/postgres/reaper.js';
import { storeDatabase, type TaskDatabase } from '../src/postgres/tables.js';
import { useHistoryStores } from './support/history-stores.js';
import { setTimeline } from './support/task-timelines.js';

const { database, resources, rows, freshSchema, openStore, reap, endTask, historyCount } = useHistoryStores();
const HOUR_MS = 3_600_000;

// -- Helpers ------------------------------------------------------------------------------------

/** Timelines written in SQL: `n` tasks with no live row, three rows each, created `ageMs` ago. */
async function insertDeadTimelines(schema: string, n: number, ageMs: number): Promise<string[]> {
  const { rows: created } = await resources.admin.query<{ task_id: string }>(
    `WITH task AS MATERIALIZED (SELECT md5(random()::text || i) AS task_id FROM generate_series(1, $1::int) AS i)
     INSERT INTO ${schema}.task_history (task_id, tool_name, owner, at, from_status, to_status, message)
     SELECT task.task_id, 'bulk', 'bulk-owner', now() - ($2::float8 - step.ms) * interval '1 millisecond',
            step.from_status, step.to_status, NULL
       FROM task,
            (VALUES (0, NULL, 'working'), (1, 'working', 'input_required'), (2, 'input_required', 'cancelled'))
              AS step(ms, from_status, to_status)
      ORDER BY task.task_id, step.ms
     RETURNING task_id`,
    [n, ageMs],
  );
  return [...new Set(created.map((row) => row.task_id))];
}

// -- What history rows carry ----------------------------------------------------------------------

describe('history rows', () => {
  test('every row names its task’s tool and owner, whichever statement wrote it', async () => {
    const schema = await freshSchema();
    const store = new PostgresTaskStore({ pool: resources.admin, schema, reaper: false, limits: { maxPayloadBytes: 1024 } });
    resources.stores.push(store);

    const asking = (await store.createTask({ toolName: 'ask', owner: 'alice' })).taskId;
    await store.requireInput(asking, { q: { method: 'roots/list' } });
    await store.applyInputResponses(asking, { q: { roots: [] } });
    await store.completeTask(asking, { content: [] });
    const failing = (await store.createTask({ toolName: 'fail', owner: '' })).taskId;
    await store.failTask(failing, { code: -32000, message: 'boom' });
    const cancelled = (await store.createTask({ toolName: 'cancel' })).taskId;
    await store.cancelTask(cancelled);
    // An oversized outcome: the content-free failure of retention.ts writes its row too.
    const oversized = (await store.createTask({ toolName: 'big', owner: 'bob' })).taskId;
    await expect(store.completeTask(oversized, { content: [{ type: 'text', text: 'x'.repeat(2000) }] })).rejects.toMatchObject({
      kind: 'retention_limit_exceeded',
    });

    const row = (taskId: string, tool_name: string, owner: string | null, from_status: string | null, to_status: string) => ({
      task_id: taskId,
      tool_name,
      owner,
      from_status,
      to_status,
    });
    expect(await rows(`SELECT task_id, tool_name, owner, from_status, to_status FROM ${schema}.task_history ORDER BY id`)).toEqual([
      row(asking, 'ask', 'alice', null, 'working'),
      row(asking, 'ask', 'alice', 'working', 'input_required'),
      row(asking, 'ask', 'alice', 'input_required', 'working'),
      row(asking, 'ask', 'alice', 'working', 'completed'),
      row(failing, 'fail', '', null, 'working'),
      row(failing, 'fail', '', 'working', 'failed'),
      row(cancelled, 'cancel', null, null, 'working'),
      row(cancelled, 'cancel', null, 'working', 'cancelled'),
      row(oversized, 'big', 'bob', null, 'working'),
      row(oversized, 'big', 'bob', 'working', 'failed'),
    ]);
  });

  test('history outlives the task, its tombstone and the tombstone’s purge, tool and owner included', async () => {
    const schema = await freshSchema();
    const store = await openStore(schema, { tombstoneRetentionMs: 0 });
    const { taskId } = await store.createTask({ toolName: 'short', owner: 'carol', ttlMs: 60_000 });
    await store.setStatus(taskId, 'input_required', 'a question');
    expect(await store.setTtl(taskId, 0)).toBe(true);

    expect(await reap(store)).toEqual({ tombstoned: 1, purged: 1, historyPurged: 0 });
    expect(await store.taskPresence(taskId)).toEqual({ state: 'missing' });
    expect(await rows(`SELECT tool_name, owner, from_status, to_status, message FROM ${schema}.task_history WHERE task_id = $1 ORDER BY id`, [taskId])).toEqual([
      { tool_name: 'short', owner: 'carol', from_status: null, to_status: 'working', message: 'Task started' },
      { tool_name: 'short', owner: 'carol', from_status: 'working', to_status: 'input_required', message: 'a question' },
    ]);
    expect(await rows(`SELECT tool_name, owner, status, transitions::int, live FROM ${schema}.task_summaries WHERE task_id = $1`, [taskId])).toEqual([
      { tool_name: 'short', owner: 'carol', status: 'input_required', transitions: 2, live: false },
    ]);
  });

  test('discardTask removes a task’s history at once, live or tombstoned, and no other task’s', async () => {
    const schema = await freshSchema();
    const store = await openStore(schema);
    const live = (await store.createTask({ toolName: 'live', ttlMs: 60_000 })).taskId;
    await store.completeTask(live, { content: [] });
    const tombstoned = (await store.createTask({ toolName: 'expired', ttlMs: 60_000 })).taskId;
    await endTask(store, tombstoned);
    expect(await store.taskPresence(tombstoned)).toEqual({ state: 'expired', owner: null });
    const kept = (await store.createTask({ toolName: 'kept' })).taskId;

    await resources.admin.query(`INSERT INTO ${schema}.task_messages (task_id, session_id, message) VALUES ($1, NULL, '{}')`, [live]);
    expect(await store.discardTask(live)).toBe(true);
    expect(await store.discardTask(tombstoned)).toBe(true);
    expect(await rows(`SELECT task_id FROM ${schema}.task_messages`)).toEqual([]);
    expect(await historyCount(schema, live)).toBe(0);
    expect(await historyCount(schema, tombstoned)).toBe(0);
    expect(await historyCount(schema, kept)).toBe(1);
    expect(await rows(`SELECT task_id FROM ${schema}.task_summaries`)).toEqual([{ task_id: kept }]);
  });
});

// -- The history phase ----------------------------------------------------------------------------

describe('the reaper’s history phase', () => {
  test('deletes the whole timeline of a task gone for good once its creation is older than historyRetentionMs, and nothing else', async () => {
    const schema = await freshSchema();
    const store = await openStore(schema, { historyRetentionMs: HOUR_MS });
    const twoHoursAgo = new Date(Date.now() - 2 * HOUR_MS);
    const minutesAgo = (minutes: number) => new Date(Date.now() - minutes * 60_000);

    // Created two hours ago, its later rows a minute old: the creation's age decides, for all rows.
    const oldGone = (await store.createTask({ toolName: 'old-gone', ttlMs: 60_000 })).taskId;
    await store.setStatus(oldGone, 'input_required', 'a question');
    await store.setStatus(oldGone, 'working', 'answered');
    await setTimeline(resources.admin, schema, oldGone, twoHoursAgo, [0, 2 * HOUR_MS - 60_000, 2 * HOUR_MS - 50_000]);
    // As old, but live: running, and settled but not expired.
    const oldRunning = (await store.createTask({ toolName: 'old-running', ttlMs: null })).taskId;
    await store.setStatus(oldRunning, 'input_required', 'a question');
    await setTimeline(resources.admin, schema, oldRunning, twoHoursAgo, [0, 1000]);
    const oldSettled = (await store.createTask({ toolName: 'old-settled', ttlMs: 86_400_000 })).taskId;
    await store.completeTask(oldSettled, { content: [] });
    await setTimeline(resources.admin, schema, oldSettled, twoHoursAgo, [0, 1000]);
    // Gone, but created inside the window.
    const recentGone = (await store.createTask({ toolName: 'recent-gone', ttlMs: 60_000 })).taskId;
    await store.failTask(recentGone, { code: -32000, message: 'boom' });
    await setTimeline(resources.admin, schema, recentGone, minutesAgo(30), [0, 1000]);
    for (const taskId of [oldGone, recentGone]) expect(await store.setTtl(taskId, 0)).toBe(true);

    // One pass: the tombstone phase takes both expired tasks, then the history phase the old one.
    expect(await reap(store)).toEqual({ tombstoned: 2, purged: 0, historyPurged: 1 });
    expect(await historyCount(schema, oldGone)).toBe(0);
    expect(await historyCount(schema, oldRunning)).toBe(2);
    expect(await historyCount(schema, oldSettled)).toBe(2);
    expect(await historyCount(schema, recentGone)).toBe(2);
    // The tombstone has a retention of its own.
    expect(await store.taskPresence(oldGone)).toEqual({ state: 'expired', owner: null });
    expect(await reap(store)).toEqual({ tombstoned: 0, purged: 0, historyPurged: 0 });
  });

  test('deletes what a task deleted in plain SQL left in input_requests, task_sessions and task_messages, with its timeline', async () => {
    const schema = await freshSchema();
    const store = await openStore(schema, { historyRetentionMs: HOUR_MS });
    const dependents = async (taskId: string) =>
      (await rows(`SELECT
         (SELECT count(*) FROM ${schema}.input_requests WHERE task_id = $1)::int AS requests,
         (SELECT count(*) FROM ${schema}.task_sessions WHERE task_id = $1)::int AS sessions,
         (SELECT count(*) FROM ${schema}.task_messages WHERE task_id = $1)::int AS messages`, [taskId]))[0];
    const addDependents = async (taskId: string) => {
      await store.requireInput(taskId, { q: { method: 'roots/list' } });
      await resources.admin.query(`INSERT INTO ${schema}.task_sessions (task_id, session_id, created_at) VALUES ($1, 's', now())`, [taskId]);
      await resources.admin.query(`INSERT INTO ${schema}.task_messages (task_id, session_id, message) VALUES ($1, 's', '{}')`, [taskId]);
    };
    const deletedByHand = (await store.createTask({ toolName: 'by-hand' })).taskId;
    const live = (await store.createTask({ toolName: 'live' })).taskId;
    for (const taskId of [deletedByHand, live]) {
      await addDependents(taskId);
      await setTimeline(resources.admin, schema, taskId, new Date(Date.now() - 2 * HOUR_MS), [0, 1000]);
    }
    // An operator's DELETE, or an older version's: no cascade takes the dependents (migration 0006).
    await resources.admin.query(`DELETE FROM ${schema}.tasks WHERE task_id = $1`, [deletedByHand]);
    expect(await dependents(deletedByHand)).toEqual({ requests: 1, sessions: 1, messages: 1 });

    expect(await reap(store)).toEqual({ tombstoned: 0, purged: 0, historyPurged: 1 });
    expect(await historyCount(schema, deletedByHand)).toBe(0);
    expect(await dependents(deletedByHand)).toEqual({ requests: 0, sessions: 0, messages: 0 });
    expect(await dependents(live)).toEqual({ requests: 1, sessions: 1, messages: 1 });
  });

  test('works in batches of batchSize tasks, each taking whole timelines, and skips one another transaction holds', async () => {
    const schema = await freshSchema();
    const dead = await insertDeadTimelines(schema, 5, 2 * HOUR_MS);
    const [held] = await insertDeadTimelines(schema, 1, 3 * HOUR_MS);
    const blocker = await resources.client();
    await blocker.query('BEGIN');
    await blocker.query(`SELECT 1 FROM ${schema}.task_history WHERE task_id = $1 AND from_status IS NULL FOR UPDATE`, [held]);

    // The reaper on a Kysely of its own, to count the statements each batch runs.
    const deletes: string[] = [];
    const pool = createPool(database.connectionString, 2);
    const db = new Kysely<TaskDatabase>({
      dialect: new PostgresDialect({ pool: dialectPool(pool, { preparedStatements: false }) }),
      log: (event) => {
        if (event.level === 'query' && event.query.sql.includes('DELETE FROM "history_')) deletes.push(event.query.sql);
      },
    });
    try {
      const reaper = new Reaper(storeDatabase(db, schema), { batchSize: 2, historyRetentionMs: HOUR_MS });
      expect(await reaper.runOnce()).toEqual({ tombstoned: 0, purged: 0, historyPurged: 5 });
      // 2 + 2 + 1 tasks: the short third batch ends the phase.
      expect(deletes.filter((text) => text.includes('task_history'))).toHaveLength(3);
      for (const taskId of dead) expect(await historyCount(schema, taskId)).toBe(0);
      expect(await historyCount(schema, held!)).toBe(3);

      await blocker.query('COMMIT');
      expect(await reaper.runOnce()).toEqual({ tombstoned: 0, purged: 0, historyPurged: 1 });
      expect(await historyCount(schema, held!)).toBe(0);
    } finally {
      await db.destroy();
      await pool.end();
    }
  });
});

describe('the history phase, batch after batch', () => {
  test('takes every gone timeline when creations tie at a batch boundary and live tasks lie among them', async () => {
    const schema = await freshSchema();
    const store = await openStore(schema, { historyRetentionMs: HOUR_MS, batchSize: 2 });
    const live = [];
    for (let i = 0; i < 3; i++) live.push((await store.createTask({ toolName: 'live', ttlMs: null })).taskId);
    const dead = await insertDeadTimelines(schema, 5, 2 * HOUR_MS);
    const later = await insertDeadTimelines(schema, 2, 2 * HOUR_MS);
    // Every creation at one instant, but the last two gone ones a second later.
    await resources.admin.query(
      `UPDATE ${schema}.task_history SET at = date_trunc('second', now()) - interval '2 hours' + CASE WHEN task_id = ANY($1) THEN interval '1 second' ELSE interval '0' END
        WHERE from_status IS NULL`,
      [later],
    );

    // Batches of 2, 2, 2 and 1: each starts at the creation the one before reached, ties included.
    expect(await reap(store)).toEqual({ tombstoned: 0, purged: 0, historyPurged: 7 });
    for (const taskId of [...dead, ...later]) expect(await historyCount(schema, taskId)).toBe(0);
    for (const taskId of live) expect(await historyCount(schema, taskId)).toBe(1);
  });
});

// -- reaper_activity ------------------------------------------------------------------------------

describe('reaper_activity', () => {
  type Activity = { phase: string; last_started_at: Date; last_finished_at: Date; last_rows: number; total_rows: number };
  const activity = (schema: string) =>
    rows<Activity>(
      `SELECT phase, last_started_at, last_finished_at, last_rows::int, total_rows::int
         FROM ${schema}.reaper_activity ORDER BY phase`,
    );
  const counts = (entries: Activity[]) => entries.map(({ phase, last_rows, total_rows }) => [phase, last_rows, total_rows]);

  test('each phase records its last run and a running total, once per pass that ran it', async () => {
    const schema = await freshSchema();
    const store = await openStore(schema, { tombstoneRetentionMs: 0, historyRetentionMs: 0 });
    const startUp = await activity(schema);
    expect(counts(startUp)).toEqual([
      ['history', 0, 0],
      ['purge', 0, 0],
      ['tombstone', 0, 0],
    ]);

    for (let i = 0; i < 2; i++) await store.createTask({ toolName: 'expired', ttlMs: 0 });
    expect(await reap(store)).toEqual({ tombstoned: 2, purged: 2, historyPurged: 2 });
    await store.createTask({ toolName: 'expired', ttlMs: 0 });
    expect(await reap(store)).toEqual({ tombstoned: 1, purged: 1, historyPurged: 1 });
    const after = await activity(schema);
    expect(counts(after)).toEqual([
      ['history', 1, 3],
      ['purge', 1, 3],
      ['tombstone', 1, 3],
    ]);
    after.forEach((entry, i) => {
      expect(entry.last_started_at.getTime()).toBeLessThanOrEqual(entry.last_finished_at.getTime());
      expect(entry.last_started_at.getTime()).toBeGreaterThan(startUp[i]!.last_finished_at.getTime());
    });

    // A phase another session holds the lock of is that session's to record: this pass leaves it.
    const other = await resources.client();
    await other.query(`SELECT pg_advisory_lock(hashtextextended($1, 0))`, [`mcp-task-store history ${schema}`]);
    await store.createTask({ toolName: 'expired', ttlMs: 0 });
    expect(await reap(store)).toEqual({ tombstoned: 1, purged: 1, historyPurged: 0 });
    const skipped = await activity(schema);
    expect(counts(skipped)).toEqual([
      ['history', 1, 3],
      ['purge', 1, 4],
      ['tombstone', 1, 4],
    ]);
    expect(skipped[0]).toEqual(after[0]);
  });
});
