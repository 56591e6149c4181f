/**
 * The statements every task runs through (create, progress, settle, read), compiled once per
 * store for its schema. Each is a single statement: one round trip, and the expiry check happens
 * inside it on the database clock.
 */
import { sql, type Kysely } from 'kysely';
import { compileQuery } from './compiled-query.js';
import type { TaskDatabase } from './tables.js';
import { recordingTransition, TRANSITION_COLUMNS } from './task-history.js';
import { isLive, isOpen, msUntilExpiry, TASK_OBJECT_COLUMNS, type SnapshotRow, type TaskObjectRow } from './task-rows.js';

export interface NewTask {
  taskId: string;
  owner: string | null;
  toolName: string;
  argumentsJson: string;
  statusMessage: string;
  ttlMs: number | null;
  pollIntervalMs: number | null;
}

/** How many rows a guarded transition changed: 0 when the task was unknown, expired or terminal. */
export interface Changed {
  changed: number;
}
export const COUNT_CHANGED = sql`count(*)::int AS changed`;

export function taskStatements(db: Kysely<TaskDatabase>, schema: string) {
  const tasks = sql.table(`${schema}.tasks`);
  return {
    /** createdAt is kept to the millisecond, as the wire format shows it. */
    insert: compileQuery<NewTask, { ms_until_expiry: number | null }>(db, (param) =>
      recordingTransition(
        schema,
        sql`
          INSERT INTO ${tasks}
            (task_id, owner, tool_name, arguments, status, status_message,
             created_at, last_updated_at, ttl_ms, expires_at, poll_interval_ms)
          SELECT ${param('taskId')}, ${param('owner')}, ${param('toolName')}, ${param('argumentsJson')}::jsonb,
                 'working', ${param('statusMessage')}, clock.now, clock.now, ${param('ttlMs')}::bigint,
                 clock.now + ${param('ttlMs')}::float8 * interval '1 millisecond', ${param('pollIntervalMs')}::bigint
            FROM (SELECT date_trunc('milliseconds', now()) AS now) AS clock
          RETURNING ${TRANSITION_COLUMNS}, ${msUntilExpiry}`,
        sql`ms_until_expiry`,
      ),
    ),

    taskObject: compileQuery<{ taskId: string }, TaskObjectRow>(db, (param) =>
      db.selectFrom('tasks').select(TASK_OBJECT_COLUMNS).where('task_id', '=', param('taskId')).where(isLive),
    ),

    snapshot: compileQuery<{ taskId: string }, SnapshotRow>(db, (param) =>
      db
        .selectFrom('tasks')
        .select([...TASK_OBJECT_COLUMNS, 'result', 'error'])
        .where('task_id', '=', param('taskId'))
        .where(isLive),
    ),

    /** A null message keeps the current one. */
    setStatus: compileQuery<{ taskId: string; status: string; message: string | null }, Changed>(db, (param) =>
      recordingTransition(
        schema,
        sql`
          UPDATE ${tasks}
             SET previous_status = status, status = ${param('status')}::text,
                 status_message = coalesce(${param('message')}::text, status_message), last_updated_at = now()
           WHERE task_id = ${param('taskId')} AND ${isOpen} AND ${isLive}
          RETURNING ${TRANSITION_COLUMNS}`,
        COUNT_CHANGED,
      ),
    ),

    /** The terminal transition of completeTask and failTask: exactly one of result and error is set. */
    settle: compileQuery<
      { taskId: string; status: 'completed' | 'failed'; message: string; result: string | null; error: string | null },
      Changed
    >(db, (param) =>
      recordingTransition(
        schema,
        sql`
          UPDATE ${tasks}
             SET previous_status = status, status = ${param('status')}::text, status_message = ${param('message')},
                 result = ${param('result')}::jsonb, error = ${param('error')}::jsonb, last_updated_at = now()
           WHERE task_id = ${param('taskId')} AND ${isOpen} AND ${isLive}
          RETURNING ${TRANSITION_COLUMNS}`,
        COUNT_CHANGED,
      ),
    ),
  };
}

export type TaskStatements = ReturnType<typeof taskStatements>;
