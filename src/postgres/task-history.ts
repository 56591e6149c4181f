/**
 * task_history gets one row per transition (the creation, then every change of status), appended
 * by the statement that makes it: it commits with it and costs no extra round trip. Progress
 * messages that keep the status are not transitions: the task row holds the latest one, and a
 * tool reporting progress every second does not grow the history.
 *
 * A statement that changes a task's status or message sets `previous_status = status` (the SET
 * reads the row it locked, so this is exact under concurrency) and returns
 * {@link TRANSITION_COLUMNS} (with `leased`, for a statement that also ends the task's lease);
 * {@link recordingTransition} wraps it. Each row names the task's tool
 * and owner, so the history still answers per tool and per owner once the task itself is gone.
 */
import { sql, type Expression, type RawBuilder } from 'kysely';
import type { StoreDatabase } from './tables.js';

export const TRANSITION_COLUMNS = sql`task_id, tool_name, owner, last_updated_at, previous_status, status, status_message, leased`;

/**
 * `change` modifies tasks and returns {@link TRANSITION_COLUMNS}; `result` is selected from its rows.
 * `also`: more CTEs (to follow `WITH … ,`) that may read `changed`, such as ending the lease.
 */
export function recordingTransition<R>(
  { tables }: StoreDatabase,
  change: Expression<unknown> | RawBuilder<unknown>,
  result: RawBuilder<unknown>,
  also?: RawBuilder<unknown>,
): RawBuilder<R> {
  return sql<R>`
    WITH changed AS (${change}),
         history AS (
           INSERT INTO ${tables.task_history} (task_id, tool_name, owner, at, from_status, to_status, message)
           SELECT task_id, tool_name, owner, last_updated_at, previous_status, status, status_message FROM changed
            WHERE previous_status IS DISTINCT FROM status
         )${also ? sql`, ${also}` : sql``}
    SELECT ${result} FROM changed`;
}

/**
 * How many rows a guarded transition changed (0 when the task was unknown, expired or terminal),
 * and how many of them changed status: a progress message keeps it.
 */
export interface Changed {
  changed: number;
  transitioned: number;
}
export const COUNT_CHANGED = sql`count(*)::int AS changed,
  count(*) FILTER (WHERE previous_status IS DISTINCT FROM status)::int AS transitioned`;
