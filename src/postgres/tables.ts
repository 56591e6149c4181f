/** The tables of migrations/, as Kysely sees them. Keep in step with the SQL files. */
import type { ColumnType, Generated } from 'kysely';
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
}

export type InputRequestState = 'outstanding' | 'answered' | 'superseded';

export interface InputRequestsTable {
  task_id: string;
  request_key: string;
  request: Jsonb<Record<string, unknown>>;
  state: InputRequestState;
  response: Jsonb<Record<string, unknown>> | null;
  issued_at: Timestamp;
  settled_at: Timestamp | null;
}

export interface TombstonesTable {
  task_id: string;
  owner: string | null;
  expired_at: Timestamp;
  tombstoned_at: Generated<Date>;
}

export interface TaskHistoryTable {
  id: Generated<string>;
  task_id: string;
  at: Timestamp;
  from_status: TaskStatus | null;
  to_status: TaskStatus;
  message: string | null;
}

export interface TaskDatabase {
  tasks: TasksTable;
  input_requests: InputRequestsTable;
  tombstones: TombstonesTable;
  task_history: TaskHistoryTable;
}
