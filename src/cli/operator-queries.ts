/**
 * The SQL behind `status`, `tasks`, `show` and `watch`, in one place, so that a schema change
 * (a view, a new table) means changing this file and not the commands. These are operator
 * queries: run by hand, now and then, so a sequential scan of `tasks` for counts is acceptable
 * where the store's hot paths would never allow one.
 *
 * Times stay Date (milliseconds); positions that must survive to the next call exactly (a
 * listing cursor, watch's re-read window) are carried as microseconds since the epoch, in text.
 */
import { sql } from 'kysely';
import type { TaskStatus } from '../contract/types.js';
import { LISTENER_APPLICATION_NAME } from '../postgres/listener.js';
import type { InputRequestState } from '../postgres/tables.js';
import type { Since } from './arguments.js';
import type { CliDatabase } from './database.js';

export const TASK_STATUSES: readonly TaskStatus[] = ['working', 'input_required', 'completed', 'failed', 'cancelled'];

/** A row that has passed its expiry is gone for the store, even before the reaper removes it. */
const LIVE = sql`(expires_at IS NULL OR expires_at > now())`;
const MICROSECONDS = (column: string) => sql`(extract(epoch FROM ${sql.ref(column)}) * 1000000)::bigint::text`;
const FROM_MICROSECONDS = (us: string) => sql`(timestamptz 'epoch' + ${us}::bigint * interval '1 microsecond')`;

// -- status ---------------------------------------------------------------------------------------

export interface StoreCounts {
  tasks: Record<TaskStatus, number>;
  /** Rows past their expiry that the reaper has not turned into tombstones yet. */
  expired: number;
  tombstones: number;
}

export async function storeCounts(database: CliDatabase): Promise<StoreCounts> {
  const { tasks, tombstones } = database.tables;
  const { rows } = await sql<{ status: TaskStatus | 'expired' | 'tombstones'; n: number }>`
    SELECT status, count(*)::int AS n FROM ${tasks} WHERE ${LIVE} GROUP BY status
    UNION ALL SELECT 'expired', count(*)::int FROM ${tasks} WHERE expires_at <= now()
    UNION ALL SELECT 'tombstones', count(*)::int FROM ${tombstones}`.execute(database.db);
  const count = (name: string) => rows.find((row) => row.status === name)?.n ?? 0;
  return {
    tasks: Object.fromEntries(TASK_STATUSES.map((status) => [status, count(status)])) as Record<TaskStatus, number>,
    expired: count('expired'),
    tombstones: count('tombstones'),
  };
}

export interface OldestWorking {
  taskId: string;
  toolName: string;
  owner: string | null;
  createdAt: Date;
  ageMs: number;
}

export async function oldestWorking(database: CliDatabase): Promise<OldestWorking | null> {
  const { rows } = await sql<{ task_id: string; tool_name: string; owner: string | null; created_at: Date; age_ms: number }>`
    SELECT task_id, tool_name, owner, created_at, (extract(epoch FROM now() - created_at) * 1000)::float8 AS age_ms
      FROM ${database.tables.tasks}
     WHERE status = 'working' AND ${LIVE}
     ORDER BY created_at, task_id
     LIMIT 1`.execute(database.db);
  const row = rows[0];
  return row ? { taskId: row.task_id, toolName: row.tool_name, owner: row.owner, createdAt: row.created_at, ageMs: Math.round(row.age_ms) } : null;
}

/**
 * Connections of store listeners and SDK message queues to this database. PostgreSQL does not
 * show what a connection listens to, so these are every schema's.
 */
export async function listenerConnections(database: CliDatabase): Promise<number> {
  const { rows } = await sql<{ n: number }>`
    SELECT count(*)::int AS n FROM pg_stat_activity
     WHERE datname = current_database() AND application_name = ${LISTENER_APPLICATION_NAME}`.execute(database.db);
  return rows[0]!.n;
}

export interface ReaperActivity {
  phase: string;
  lastStartedAt: Date | null;
  lastFinishedAt: Date | null;
  lastRows: number | null;
  totalRows: number | null;
}

/** What the reapers recorded in `reaper_activity`; null where the schema has no such table (before 0004). */
export async function reaperActivity(database: CliDatabase): Promise<ReaperActivity[] | null> {
  const table = `${database.schema}.reaper_activity`;
  const { rows: found } = await sql<{ exists: boolean }>`SELECT to_regclass(${table}) IS NOT NULL AS exists`.execute(database.db);
  if (!found[0]!.exists) return null;
  const { rows } = await sql<{ phase: string; last_started_at: Date | null; last_finished_at: Date | null; last_rows: string | null; total_rows: string | null }>`
    SELECT phase, last_started_at, last_finished_at, last_rows, total_rows FROM ${sql.table(table)} ORDER BY phase`.execute(database.db);
  return rows.map((row) => ({
    phase: row.phase,
    lastStartedAt: row.last_started_at,
    lastFinishedAt: row.last_finished_at,
    lastRows: toNumber(row.last_rows),
    totalRows: toNumber(row.total_rows),
  }));
}

// -- tasks ----------------------------------------------------------------------------------------

export interface TaskFilter {
  status?: TaskStatus;
  owner?: string;
  toolName?: string;
  since?: Since;
}

export interface TaskLine {
  taskId: string;
  status: TaskStatus;
  toolName: string;
  owner: string | null;
  statusMessage: string | null;
  createdAt: Date;
  lastUpdatedAt: Date;
  expiresAt: Date | null;
}

/** Where a listing page ends: the last row's creation time in microseconds, and its id. */
export interface ListingPosition {
  createdUs: string;
  taskId: string;
}

/** Live tasks, newest first, `limit` of them after `after`; `next` is where the following page starts. */
export async function listTasks(
  database: CliDatabase,
  filter: TaskFilter,
  after: ListingPosition | null,
  limit: number,
): Promise<{ tasks: TaskLine[]; next: ListingPosition | null }> {
  const conditions = [LIVE];
  if (filter.status) conditions.push(sql`status = ${filter.status}`);
  if (filter.owner !== undefined) conditions.push(sql`owner = ${filter.owner}`);
  if (filter.toolName) conditions.push(sql`tool_name = ${filter.toolName}`);
  if (filter.since) {
    const since = filter.since;
    conditions.push('at' in since ? sql`created_at >= ${since.at}` : sql`created_at >= now() - ${since.agoMs}::float8 * interval '1 millisecond'`);
  }
  if (after) conditions.push(sql`(created_at, task_id) < (${FROM_MICROSECONDS(after.createdUs)}, ${after.taskId})`);
  const { rows } = await sql<TaskRow & { created_us: string }>`
    SELECT ${TASK_COLUMNS}, ${MICROSECONDS('created_at')} AS created_us
      FROM ${database.tables.tasks}
     WHERE ${sql.join(conditions, sql` AND `)}
     ORDER BY created_at DESC, task_id DESC
     LIMIT ${limit + 1}`.execute(database.db);
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return { tasks: page.map(taskLine), next: rows.length > limit && last ? { createdUs: last.created_us, taskId: last.task_id } : null };
}

const TASK_COLUMNS = sql`task_id, status, tool_name, owner, status_message, created_at, last_updated_at, expires_at`;

interface TaskRow {
  task_id: string;
  status: TaskStatus;
  tool_name: string;
  owner: string | null;
  status_message: string | null;
  created_at: Date;
  last_updated_at: Date;
  expires_at: Date | null;
}

function taskLine(row: TaskRow): TaskLine {
  return {
    taskId: row.task_id,
    status: row.status,
    toolName: row.tool_name,
    owner: row.owner,
    statusMessage: row.status_message,
    createdAt: row.created_at,
    lastUpdatedAt: row.last_updated_at,
    expiresAt: row.expires_at,
  };
}

// -- show -----------------------------------------------------------------------------------------

export interface TaskDetail extends TaskLine {
  ttlMs: number | null;
  pollIntervalMs: number | null;
  cancelRequestedAt: Date | null;
  /** Past its expiry, waiting for the reaper. */
  expired: boolean;
  error: Record<string, unknown> | null;
  /** The database's clock when the task was read, for the age of its current status. */
  readAt: Date;
}

export async function readTask(database: CliDatabase, taskId: string): Promise<TaskDetail | null> {
  const { rows } = await sql<TaskRow & { ttl_ms: string | null; poll_interval_ms: string | null; cancel_requested_at: Date | null; expired: boolean; error: Record<string, unknown> | null; now: Date }>`
    SELECT ${TASK_COLUMNS}, ttl_ms, poll_interval_ms, cancel_requested_at, error,
           coalesce(expires_at <= now(), false) AS expired, now() AS now
      FROM ${database.tables.tasks} WHERE task_id = ${taskId}`.execute(database.db);
  const row = rows[0];
  if (!row) return null;
  return {
    ...taskLine(row),
    ttlMs: toNumber(row.ttl_ms),
    pollIntervalMs: toNumber(row.poll_interval_ms),
    cancelRequestedAt: row.cancel_requested_at,
    expired: row.expired,
    error: row.error,
    readAt: row.now,
  };
}

export interface Tombstone {
  owner: string | null;
  expiredAt: Date;
  tombstonedAt: Date;
}

export async function readTombstone(database: CliDatabase, taskId: string): Promise<Tombstone | null> {
  const { rows } = await sql<{ owner: string | null; expired_at: Date; tombstoned_at: Date }>`
    SELECT owner, expired_at, tombstoned_at FROM ${database.tables.tombstones} WHERE task_id = ${taskId}`.execute(database.db);
  const row = rows[0];
  return row ? { owner: row.owner, expiredAt: row.expired_at, tombstonedAt: row.tombstoned_at } : null;
}

export interface InputRequestLine {
  key: string;
  state: InputRequestState;
  request: Record<string, unknown>;
  response: Record<string, unknown> | null;
  issuedAt: Date;
  settledAt: Date | null;
}

export async function readInputRequests(database: CliDatabase, taskId: string): Promise<InputRequestLine[]> {
  const { rows } = await sql<{ request_key: string; state: InputRequestState; request: Record<string, unknown>; response: Record<string, unknown> | null; issued_at: Date; settled_at: Date | null }>`
    SELECT request_key, state, request, response, issued_at, settled_at
      FROM ${database.tables.input_requests} WHERE task_id = ${taskId}
     ORDER BY issued_at, request_key`.execute(database.db);
  return rows.map((row) => ({
    key: row.request_key,
    state: row.state,
    request: row.request,
    response: row.response,
    issuedAt: row.issued_at,
    settledAt: row.settled_at,
  }));
}

/** One transition; `previousStateMs` is how long the task was in `fromStatus` (null for the creation). */
export interface Transition {
  at: Date;
  fromStatus: TaskStatus | null;
  toStatus: TaskStatus;
  message: string | null;
  previousStateMs: number | null;
}

export async function readHistory(database: CliDatabase, taskId: string): Promise<Transition[]> {
  // The view measures the time in each status, so psql users and this command agree on it.
  const { rows } = await sql<{ at: Date; from_status: TaskStatus | null; to_status: TaskStatus; message: string | null; previous_state_ms: string | null }>`
    SELECT at, from_status, to_status, message, previous_state_ms
      FROM ${sql.table(`${database.schema}.task_transitions`)}
     WHERE task_id = ${taskId} ORDER BY seq`.execute(database.db);
  return rows.map((row) => ({
    at: row.at,
    fromStatus: row.from_status,
    toStatus: row.to_status,
    message: row.message,
    previousStateMs: row.previous_state_ms === null ? null : Number(row.previous_state_ms),
  }));
}

// -- watch ----------------------------------------------------------------------------------------

export interface WatchedTask extends TaskLine {
  cancelRequestedAt: Date | null;
  /** Past its expiry: gone for the store, though the reaper has not removed it yet. */
  expired: boolean;
  /** last_updated_at in microseconds: what the re-read window is measured in. */
  updatedUs: string;
}

/**
 * Task rows updated or expired after `afterUs` (nothing announces an expiry), and the rows
 * `taskIds` names whatever their time (a cancel request on a settled task changes no timestamp);
 * with the database's clock then.
 */
export async function readChangedTasks(database: CliDatabase, afterUs: string, taskIds: string[]): Promise<{ tasks: WatchedTask[]; nowUs: string }> {
  const { rows } = await sql<TaskRow & { cancel_requested_at: Date | null; expired: boolean; updated_us: string; now_us: string }>`
    SELECT ${TASK_COLUMNS}, cancel_requested_at, NOT ${LIVE} AS expired, ${MICROSECONDS('last_updated_at')} AS updated_us,
           (extract(epoch FROM now()) * 1000000)::bigint::text AS now_us
      FROM ${database.tables.tasks}
     WHERE last_updated_at > ${FROM_MICROSECONDS(afterUs)} OR task_id = ANY(${taskIds}::text[])
        OR (expires_at > ${FROM_MICROSECONDS(afterUs)} AND expires_at <= now())
     ORDER BY last_updated_at, task_id`.execute(database.db);
  const nowUs = rows[0]?.now_us ?? (await databaseNowUs(database));
  const tasks = rows.map((row) => ({ ...taskLine(row), cancelRequestedAt: row.cancel_requested_at, expired: row.expired, updatedUs: row.updated_us }));
  return { tasks, nowUs };
}

export async function databaseNowUs(database: CliDatabase): Promise<string> {
  const { rows } = await sql<{ now_us: string }>`SELECT (extract(epoch FROM now()) * 1000000)::bigint::text AS now_us`.execute(database.db);
  return rows[0]!.now_us;
}

/** Of `taskIds`, those with a tombstone: gone because they expired, not because they were discarded. */
export async function tombstonedAmong(database: CliDatabase, taskIds: string[]): Promise<Set<string>> {
  const { rows } = await sql<{ task_id: string }>`
    SELECT task_id FROM ${database.tables.tombstones} WHERE task_id = ANY(${taskIds}::text[])`.execute(database.db);
  return new Set(rows.map((row) => row.task_id));
}

function toNumber(value: string | number | null): number | null {
  return value === null ? null : Number(value);
}
