/**
 * The tables of migrations/, as Kysely sees them (keep in step with the SQL files), and their
 * schema-qualified names for raw SQL, built here and nowhere else.
 */
import { sql, type ColumnType, type Generated, type Kysely } from 'kysely';
import type { TaskStatus } from '../contract/types.js';

type Timestamp = ColumnType<Date, Date | string, Date | string>;
/** int8 arrives as a string from node-postgres; it is converted where it is read. */
type Int8 = ColumnType<string, number, number>;
/** jsonb: written as a JSON string, read back parsed. */
type Jsonb<T> = ColumnType<T, string, string>;

export interface TasksTable {
  task_id: string;
  owner: string | null;
  tool_name: string;
  arguments: Jsonb<unknown>;
  status: TaskStatus;
  status_message: string | null;
  created_at: Timestamp;
  last_updated_at: Timestamp;
  ttl_ms: Int8 | null;
  expires_at: Timestamp | null;
  poll_interval_ms: Int8 | null;
  meta: Jsonb<Record<string, unknown>> | null;
  result: Jsonb<Record<string, unknown>> | null;
  error: Jsonb<Record<string, unknown>> | null;
  cancel_requested_at: Timestamp | null;
  awaited: Generated<boolean>;
  leased: Generated<boolean>;
  requested_input: Generated<boolean>;
  /** Migration 0011: the runner holding the open task's lease; '' while it waits for a resume. */
  runner_id: string | null;
}

export type InputRequestState = 'outstanding' | 'answered' | 'superseded';

interface InputRequestsTable {
  task_id: string;
  request_key: string;
  request: Jsonb<Record<string, unknown>>;
  state: InputRequestState;
  response: Jsonb<Record<string, unknown>> | null;
  issued_at: Timestamp;
  settled_at: Timestamp | null;
}

interface TombstonesTable {
  task_id: string;
  owner: string | null;
  expired_at: Timestamp;
  tombstoned_at: Generated<Date>;
}

interface TaskHistoryTable {
  id: Generated<string>;
  task_id: string;
  /** NULL only in rows from before migration 0004 whose task was gone. */
  tool_name: string | null;
  owner: string | null;
  at: Timestamp;
  from_status: TaskStatus | null;
  to_status: TaskStatus;
  message: string | null;
  /** Migration 0007: set on the rows a rescue writes only. */
  lost_runner: string | null;
  rescued_by: string | null;
}

/** Migration 0007: the lease of a task a runner executes (see src/contract/leases.ts). */
export interface TaskLeasesTable {
  task_id: string;
  /** NULL: rescued, waiting for an instance to resume it. */
  runner_id: string | null;
  expires_at: Timestamp;
  acquired_at: Timestamp;
  attempts: Generated<number>;
  lost_runner: string | null;
  /** Migration 0011: the statement that wrote this lease wrote the task row's runner_id too. */
  task_synced: Generated<boolean>;
}

/** Migration 0012: a store instance creating leased tasks, renewed by its heartbeats. */
interface LeaseRunnersTable {
  runner_id: string;
  lease_ms: Int8;
  started_at: Timestamp;
  beat_at: Timestamp;
  /** The runner's tasks not yet in task_leases were all created at or after this. */
  listed_from: Timestamp;
}

/** Migration 0012's view: every lease in force, listed in task_leases or not yet. */
interface ExecutionLeasesView {
  task_id: string;
  runner_id: string | null;
  expires_at: Timestamp;
  acquired_at: Timestamp;
  attempts: number;
  lost_runner: string | null;
  lost_status: string | null;
}

/** Migration 0002: written by the SDK integration (src/sdk), deleted with their task by the store. */
interface TaskSessionsTable {
  task_id: string;
  session_id: string;
  created_at: Timestamp;
}

interface TaskMessagesTable {
  task_id: string;
  session_id: string | null;
  position: Generated<string>;
  message: Jsonb<Record<string, unknown>>;
  queued_at: Generated<Date>;
}

export type ReaperPhase = 'tombstone' | 'purge' | 'history';
/** A phase one instance at a time runs under an advisory lock, recorded in reaper_activity. */
export type ActivityPhase = ReaperPhase | 'rescue';

interface ReaperActivityTable {
  phase: ActivityPhase;
  last_started_at: Timestamp | null;
  last_finished_at: Timestamp | null;
  last_rows: Int8 | null;
  total_rows: Int8 | null;
}

export interface TaskDatabase {
  tasks: TasksTable;
  input_requests: InputRequestsTable;
  tombstones: TombstonesTable;
  task_history: TaskHistoryTable;
  reaper_activity: ReaperActivityTable;
  task_sessions: TaskSessionsTable;
  task_messages: TaskMessagesTable;
  task_leases: TaskLeasesTable;
  lease_runners: LeaseRunnersTable;
  execution_leases: ExecutionLeasesView;
}

/** The database a store works on: Kysely bound to the schema, and the schema's tables for raw SQL. */
export interface StoreDatabase {
  readonly db: Kysely<TaskDatabase>;
  readonly schema: string;
  readonly tables: Record<keyof TaskDatabase, ReturnType<typeof sql.table>>;
}

export function storeDatabase(db: Kysely<TaskDatabase>, schema: string): StoreDatabase {
  const table = (name: keyof TaskDatabase) => sql.table(`${schema}.${name}`);
  return {
    db: db.withSchema(schema),
    schema,
    tables: {
      tasks: table('tasks'),
      input_requests: table('input_requests'),
      tombstones: table('tombstones'),
      task_history: table('task_history'),
      reaper_activity: table('reaper_activity'),
      task_sessions: table('task_sessions'),
      task_messages: table('task_messages'),
      task_leases: table('task_leases'),
      lease_runners: table('lease_runners'),
      execution_leases: table('execution_leases'),
    },
  };
}
