/**
 * The rows that hang off a task: its input requests, and what the SDK integration keeps beside it
 * (the session that created it, the messages queued for it). Since migration 0006 no foreign key
 * cascades them, because a cascade runs once per deleted task, which cost the reaper half its
 * statement; every statement that deletes tasks deletes them too, as a set, with these CTEs.
 */
import { sql, type RawBuilder } from 'kysely';
import type { StoreDatabase } from './tables.js';

/**
 * CTEs (to follow `WITH … ,`) deleting the dependents of the tasks whose ids `taskIds` yields, an
 * expression of type text[].
 */
export function deletingDependents({ tables }: StoreDatabase, taskIds: RawBuilder<unknown>): RawBuilder<unknown> {
  return sql`
    requests_gone AS (DELETE FROM ${tables.input_requests} WHERE task_id = ANY(${taskIds})),
    sessions_gone AS (DELETE FROM ${tables.task_sessions} WHERE task_id = ANY(${taskIds})),
    messages_gone AS (DELETE FROM ${tables.task_messages} WHERE task_id = ANY(${taskIds}))`;
}
