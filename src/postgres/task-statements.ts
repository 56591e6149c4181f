/**
 * The statements on task rows: every read and single-statement transition of the store and its
 * watcher, compiled once per store for its schema and run as named prepared statements. Each is
 * one round trip, with the expiry check inside it on the database clock. A statement that may wait
 * for the task's row lock bounds that wait itself (`withinLockTimeout`).
 *
 * The input-request protocol has its statements in input-requests.ts, the retention limits theirs
 * in retention.ts, and the reaper its own in reaper.ts.
 */
import { sql } from 'kysely';
import { encodeCursor } from '../contract/listing.js';
import type { TaskPage } from '../contract/types.js';
import type { ListFilter } from '../contract/validation.js';
import { compileQuery } from './compiled-query.js';
import type { StoreDatabase } from './tables.js';
import { endingLeases, leaseAllows } from './lease-statements.js';
import { deletingDependents } from './task-dependents.js';
import { COUNT_CHANGED, recordingTransition, TRANSITION_COLUMNS, type Changed } from './task-history.js';
import {
  isLive,
  isOpen,
  msUntilExpiry,
  SETTLED_ONLY_COLUMNS,
  SNAPSHOT_COLUMNS,
  TASK_OBJECT_COLUMNS,
  toTaskObject,
  withinLockTimeout,
  type SnapshotRow,
  type TaskObjectRow,
  type TaskState,
} from './task-rows.js';

export interface NewTask {
  taskId: string;
  owner: string | null;
  toolName: string;
  argumentsJson: string;
  statusMessage: string;
  ttlMs: number | null;
  pollIntervalMs: number | null;
}

type ById = { taskId: string };
/** What is left of the call's lock timeout, for a statement that may wait for the task's row lock. */
type Locking = { taskId: string; lockTimeout: string };
type ByIds = { taskIds: string[] };
/**
 * The runner id of the instance making the call: a leased task takes progress and outcomes from
 * its runner only. Null for a client's call (an answer), which any instance records.
 */
type Runner = { runnerId: string | null };
export type TimeLeft = { ms_until_expiry: number | null };
/** A creation time in milliseconds since the epoch: it is kept to the millisecond. */
export type CreatedAt = { created_ms: number };

export function taskStatements(database: StoreDatabase) {
  const { db, tables } = database;
  /** `runner`: the runner whose lease row the same statement writes (see migrations 0008 and 0011). */
  const inserting = (param: (name: keyof NewTask) => unknown, runner: unknown) => sql`
    INSERT INTO ${tables.tasks}
      (task_id, owner, tool_name, arguments, status, status_message,
       created_at, last_updated_at, ttl_ms, expires_at, poll_interval_ms, leased, runner_id)
    SELECT ${param('taskId')}, ${param('owner')}, ${param('toolName')}, ${param('argumentsJson')}::jsonb,
           'working', ${param('statusMessage')}, clock.now, clock.now, ${param('ttlMs')}::bigint,
           clock.now + ${param('ttlMs')}::float8 * interval '1 millisecond', ${param('pollIntervalMs')}::bigint,
           false, ${runner === null ? sql`NULL` : sql`${runner}::text`}
      FROM (SELECT date_trunc('milliseconds', now()) AS now) AS clock
    RETURNING ${TRANSITION_COLUMNS}, created_at, ttl_ms, poll_interval_ms, meta, ${msUntilExpiry}`;
  return {
    /** createdAt is kept to the millisecond, as the wire format shows it. */
    insert: compileQuery<NewTask, TimeLeft>(db, (param) => recordingTransition(database, inserting(param, null), sql`ms_until_expiry`)),

    /**
     * `insert`, naming the instance that will run the task: its lease is the runner's until the
     * runner's next heartbeat lists it (migration 0012). It returns the creation time, all the
     * runner lacks to know the task as created (`createdTask`).
     */
    insertLeased: compileQuery<NewTask & { runnerId: string }, CreatedAt & TimeLeft>(db, (param) =>
      recordingTransition(
        database,
        inserting(param, param('runnerId')),
        sql`(extract(epoch FROM created_at) * 1000)::float8 AS created_ms, ms_until_expiry`,
      ),
    ),

    owner: compileQuery<ById, { owner: string | null }>(db, (param) =>
      db.selectFrom('tasks').select('owner').where('task_id', '=', param('taskId')).where(isLive),
    ),

    /**
     * One statement, so one snapshot: a task the reaper moves to the tombstones meanwhile is seen
     * either as a live row or as a tombstone, never as neither.
     */
    presence: compileQuery<ById, { live: boolean; owner: string | null }>(db, (param) => sql`
      SELECT ${isLive} AS live, owner FROM ${tables.tasks} WHERE task_id = ${param('taskId')}
      UNION ALL
      SELECT false, owner FROM ${tables.tombstones} WHERE task_id = ${param('taskId')}
      LIMIT 1`),

    taskObject: compileQuery<ById, TaskObjectRow>(db, (param) =>
      db.selectFrom('tasks').select(TASK_OBJECT_COLUMNS).where('task_id', '=', param('taskId')).where(isLive),
    ),

    snapshot: compileQuery<ById, SnapshotRow>(db, (param) =>
      db.selectFrom('tasks').select(SNAPSHOT_COLUMNS).where('task_id', '=', param('taskId')).where(isLive),
    ),

    /** A null message keeps the current one. */
    setStatus: compileQuery<Locking & Runner & { status: string; message: string | null }, Changed>(db, (param) =>
      recordingTransition(
        database,
        sql`
          UPDATE ${tables.tasks}
             SET previous_status = status, status = ${param('status')}::text,
                 status_message = coalesce(${param('message')}::text, status_message), last_updated_at = now()
           WHERE task_id = ${param('taskId')} AND ${leaseAllows(param('runnerId'))}
             AND ${isOpen} AND ${isLive} AND ${withinLockTimeout(param('lockTimeout'))}
          RETURNING ${TRANSITION_COLUMNS}`,
        COUNT_CHANGED,
      ),
    ),

    /**
     * The terminal transition of completeTask and failTask: exactly one of result and error is set.
     * Refused to a runner that lost the task's lease; ends the lease.
     */
    settle: compileQuery<
      Locking & Runner & { status: 'completed' | 'failed'; message: string; result: string | null; error: string | null },
      Changed
    >(db, (param) =>
      recordingTransition(
        database,
        sql`
          UPDATE ${tables.tasks}
             SET previous_status = status, status = ${param('status')}::text, status_message = ${param('message')},
                 result = ${param('result')}::jsonb, error = ${param('error')}::jsonb, runner_id = NULL, last_updated_at = now()
           WHERE task_id = ${param('taskId')} AND ${leaseAllows(param('runnerId'))}
             AND ${isOpen} AND ${isLive} AND ${withinLockTimeout(param('lockTimeout'))}
          RETURNING ${TRANSITION_COLUMNS}`,
        COUNT_CHANGED,
        endingLeases(database, sql`SELECT task_id FROM changed WHERE leased`),
      ),
    ),

    /**
     * Records the cancel request on any live task; only an open one becomes `cancelled`
     * (`transitioned`), which ends its lease, whoever holds it.
     */
    cancel: compileQuery<Locking & { message: string }, TaskObjectRow & { transitioned: boolean }>(db, (param) =>
      recordingTransition(
        database,
        sql`
          UPDATE ${tables.tasks}
             SET previous_status = status,
                 status = CASE WHEN ${isOpen} THEN 'cancelled' ELSE status END,
                 status_message = CASE WHEN ${isOpen} THEN ${param('message')}::text ELSE status_message END,
                 last_updated_at = CASE WHEN ${isOpen} THEN now() ELSE last_updated_at END,
                 runner_id = CASE WHEN ${isOpen} THEN NULL ELSE runner_id END,
                 -- clock_timestamp() differs on every call, so each cancel is a change (and a NOTIFY).
                 cancel_requested_at = clock_timestamp()
           WHERE task_id = ${param('taskId')} AND ${isLive} AND ${withinLockTimeout(param('lockTimeout'))}
          RETURNING ${TRANSITION_COLUMNS}, created_at, ttl_ms, poll_interval_ms, meta`,
        sql`${sql.join(TASK_OBJECT_COLUMNS.map((column) => sql.ref(column)))},
            previous_status IS DISTINCT FROM status AS transitioned`,
        endingLeases(database, sql`SELECT task_id FROM changed WHERE leased AND previous_status IS DISTINCT FROM status`),
      ),
    ),

    /** The deadline moves, measured from creation; one in the past expires the task at once. */
    setTtl: compileQuery<Locking & { ttlMs: number }, TimeLeft>(db, (param) =>
      db
        .updateTable('tasks')
        .set({
          ttl_ms: param('ttlMs'),
          expires_at: sql<Date>`created_at + ${param('ttlMs')}::float8 * interval '1 millisecond'`,
          last_updated_at: sql<Date>`now()`,
        })
        .where('task_id', '=', param('taskId'))
        .where(isLive)
        .where(withinLockTimeout(param('lockTimeout')))
        .returning(msUntilExpiry),
    ),

    setMeta: compileQuery<Locking & { metaJson: string }, never>(db, (param) =>
      db
        .updateTable('tasks')
        .set({ meta: param('metaJson') })
        .where('task_id', '=', param('taskId'))
        .where(isLive)
        .where(withinLockTimeout(param('lockTimeout'))),
    ),

    /** A live task or a tombstone, with the task's history. */
    discard: compileQuery<Locking, { removed: number }>(db, (param) => sql`
      WITH live AS (
             DELETE FROM ${tables.tasks}
              WHERE task_id = ${param('taskId')} AND ${withinLockTimeout(param('lockTimeout'))} RETURNING 1),
           dead AS (
             DELETE FROM ${tables.tombstones}
              WHERE task_id = ${param('taskId')} AND ${withinLockTimeout(param('lockTimeout'))} RETURNING 1),
           history AS (
             DELETE FROM ${tables.task_history}
              WHERE task_id = ${param('taskId')} AND ${withinLockTimeout(param('lockTimeout'))})
      SELECT (SELECT count(*) FROM live)::int + (SELECT count(*) FROM dead)::int AS removed`),

    /** The task's dependents (task-dependents.ts), after `discard` in the same transaction. */
    discardDependents: compileQuery<ById, never>(db, (param) => sql`
      WITH ${deletingDependents(database, sql`ARRAY[${param('taskId')}::text]`)}
      SELECT`),

    resumeContext: compileQuery<
      ById,
      TimeLeft & {
        tool_name: string;
        arguments: unknown;
        cancel_requested: boolean;
        answers: [string, Record<string, unknown>][] | null;
      }
    >(db, (param) => sql`
      SELECT t.tool_name, t.arguments, t.cancel_requested_at IS NOT NULL AS cancel_requested, ${msUntilExpiry},
             (SELECT jsonb_agg(jsonb_build_array(r.request_key, r.response))
                FROM ${tables.input_requests} AS r
               WHERE r.task_id = t.task_id AND r.state = 'answered') AS answers
        FROM ${tables.tasks} AS t
       WHERE t.task_id = ${param('taskId')} AND ${isLive}`),

    /** Asks the settling transaction to NOTIFY: only tasks a waiter flagged are announced. */
    markAwaited: compileQuery<Locking, never>(db, (param) =>
      db
        .updateTable('tasks')
        .set({ awaited: true })
        .where('task_id', '=', param('taskId'))
        .where('awaited', '=', false)
        .where(isOpen)
        .where(withinLockTimeout(param('lockTimeout'))),
    ),

    /**
     * markAwaited for many tasks in one statement that never waits for a row lock: it flags the
     * open, unflagged rows it can lock now, and returns those it could not (another transaction
     * holds them), which are flagged one at a time with markAwaited instead.
     */
    markAwaitedUnlessLocked: compileQuery<ByIds, { task_id: string }>(db, (param) => sql`
      WITH wanted AS (
             SELECT task_id FROM ${tables.tasks}
              WHERE task_id = ANY(${param('taskIds')}::text[]) AND NOT awaited AND ${isOpen}),
           flagged AS (
             UPDATE ${tables.tasks} SET awaited = true
              WHERE task_id = ANY(ARRAY(
                SELECT task_id FROM ${tables.tasks}
                 WHERE task_id = ANY(${param('taskIds')}::text[]) AND NOT awaited AND ${isOpen}
                   FOR NO KEY UPDATE SKIP LOCKED))
             RETURNING task_id)
      SELECT task_id FROM wanted WHERE task_id NOT IN (SELECT task_id FROM flagged)`),

    /**
     * Live rows and tombstones of the given tasks, read in one statement (one snapshot); a task that
     * settled and is waited for (`waitedIds`) comes with its snapshot, so one round trip wakes its
     * waiters.
     */
    states: compileQuery<ByIds & { waitedIds: string[] }, TaskState>(db, (param) => {
      const settledColumns = sql.join(SETTLED_ONLY_COLUMNS.map((column) => sql.ref(`settled.${column}`)));
      return sql`
      SELECT t.task_id, t.status, NOT ${isLive} AS expired, t.cancel_requested_at IS NOT NULL AS cancel_requested,
             ${msUntilExpiry}, settled.task_id IS NOT NULL AS settled, ${settledColumns}
        FROM ${tables.tasks} AS t
        LEFT JOIN LATERAL (
          SELECT ${sql.join(['task_id', ...SETTLED_ONLY_COLUMNS].map((column) => sql.ref(`t.${column}`)))}
           WHERE t.task_id = ANY(${param('waitedIds')}::text[]) AND NOT ${isOpen} AND ${isLive}) AS settled ON true
       WHERE t.task_id = ANY(${param('taskIds')}::text[])
      UNION ALL
      SELECT task_id, NULL, true, false, NULL, false, ${sql.join(SETTLED_ONLY_COLUMNS.map(() => sql`NULL`))}
        FROM ${tables.tombstones} WHERE task_id = ANY(${param('taskIds')}::text[])`;
    }),
  };
}

export type TaskStatements = ReturnType<typeof taskStatements>;

/**
 * One page of live tasks in listing order. It reads one row more than the limit to tell whether
 * another page follows. Built per call: the filters change the statement's shape.
 */
export async function listPage({ db }: StoreDatabase, { status, owner, after, limit }: ListFilter): Promise<TaskPage> {
  let query = db.selectFrom('tasks').select(TASK_OBJECT_COLUMNS).where(isLive);
  if (status !== undefined) query = query.where('status', '=', status);
  if (owner !== undefined) query = owner === null ? query.where('owner', 'is', null) : query.where('owner', '=', owner);
  if (after) {
    query = query.where(
      sql<boolean>`(created_at, task_id) > (to_timestamp(${after.createdAtMs}::float8 / 1000), ${after.taskId})`,
    );
  }
  const rows = await query.orderBy('created_at').orderBy('task_id').limit(limit + 1).execute();
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return {
    tasks: page.map(toTaskObject),
    nextCursor: rows.length > limit && last ? encodeCursor({ createdAtMs: last.created_at.getTime(), taskId: last.task_id }) : null,
  };
}
