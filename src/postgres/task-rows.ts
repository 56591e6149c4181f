/** Reading task rows: the columns a TaskObject needs and the SQL that decides expiry. */
import { sql, type Selectable } from 'kysely';
import type { CallToolResult, JsonRpcError, TaskObject, TaskSnapshot, TaskStatus } from '../contract/types.js';
import type { TasksTable } from './tables.js';
import type { NewTask } from './task-statements.js';

/** A task is live until its deadline, on the database clock, whether or not the reaper has run. */
export const isLive = sql<boolean>`(expires_at IS NULL OR expires_at > now())`;

/**
 * Sets `lock_timeout` (milliseconds, as text) for the statement's own transaction, like SET LOCAL
 * but with no round trip of its own. Placed in the WHERE of the rows a statement locks, it runs
 * before the statement waits for any of them: a row that matches is read (and this evaluated)
 * before its lock is awaited, and a row that matches nothing is never waited for. See task-gate.ts.
 */
export const withinLockTimeout = (lockTimeout: string) =>
  sql<boolean>`set_config('lock_timeout', ${lockTimeout}::text, true) IS NOT NULL`;

/** The task can still change status: it is neither completed, failed nor cancelled. */
export const isOpen = sql<boolean>`status IN ('working', 'input_required')`;

/** Milliseconds left before expiry on the database clock (null: never expires). */
export const msUntilExpiry = sql<number | null>`(extract(epoch FROM expires_at - now()) * 1000)::float8`.as(
  'ms_until_expiry',
);

export const TASK_OBJECT_COLUMNS = [
  'task_id',
  'status',
  'status_message',
  'created_at',
  'last_updated_at',
  'ttl_ms',
  'poll_interval_ms',
  'meta',
] as const;

export type TaskObjectRow = Pick<Selectable<TasksTable>, (typeof TASK_OBJECT_COLUMNS)[number]>;

export function toTaskObject(row: TaskObjectRow): TaskObject {
  const task: TaskObject = {
    taskId: row.task_id,
    status: row.status,
    createdAt: row.created_at.toISOString(),
    lastUpdatedAt: row.last_updated_at.toISOString(),
    ttlMs: row.ttl_ms === null ? null : Number(row.ttl_ms),
  };
  if (row.status_message !== null) task.statusMessage = row.status_message;
  if (row.poll_interval_ms !== null) task.pollIntervalMs = Number(row.poll_interval_ms);
  if (row.meta !== null) task._meta = row.meta;
  return task;
}

/** The task object `getTask` would read right after `task` was inserted at `createdMs`: the row it wrote. */
export function createdTask(task: NewTask, createdMs: number): TaskObject {
  const createdAt = new Date(createdMs);
  const bigint = (value: number | null) => (value === null ? null : String(value));
  return toTaskObject({
    task_id: task.taskId,
    status: 'working',
    status_message: task.statusMessage,
    created_at: createdAt,
    last_updated_at: createdAt,
    ttl_ms: bigint(task.ttlMs),
    poll_interval_ms: bigint(task.pollIntervalMs),
    meta: null,
  });
}

export type SnapshotRow = TaskObjectRow & Pick<Selectable<TasksTable>, 'result' | 'error'>;

export function toSnapshot(row: SnapshotRow): TaskSnapshot {
  return {
    task: toTaskObject(row),
    result: (row.result as CallToolResult | null) ?? null,
    error: (row.error as JsonRpcError | null) ?? null,
  };
}

/** A snapshot's columns: the task object's, and its outcome. */
export const SNAPSHOT_COLUMNS = [...TASK_OBJECT_COLUMNS, 'result', 'error'] as const;

/** A snapshot's columns beyond the task id and status: what a settled task's state adds. */
export const SETTLED_ONLY_COLUMNS = SNAPSHOT_COLUMNS.filter((column) => column !== 'task_id' && column !== 'status');

/**
 * What the watchers read about a task they watch: a live row, or (status null) a tombstone; a
 * settled task that someone waits for comes with its snapshot.
 */
export type TaskState = {
  task_id: string;
  status: TaskStatus | null;
  expired: boolean;
  cancel_requested: boolean;
  ms_until_expiry: number | null;
} & ({ settled: false } | ({ settled: true } & Omit<SnapshotRow, 'task_id' | 'status'>));
