/**
 * The rows that hang off a task: its input requests, its execution lease, and what the SDK
 * integration keeps beside it (the session that created it, the messages queued for it). Since
 * migration 0006 no foreign key cascades them, because a cascade runs once per deleted task,
 * which cost the reaper half its statement; every statement that deletes tasks deletes them too,
 * as a set, with these CTEs. discardTask, which must also look for the task among the tombstones,
 * has its transaction here.
 */
import { sql, type RawBuilder } from 'kysely';
import type { StoreDatabase } from './tables.js';
import type { TaskStatements } from './task-statements.js';

/**
 * CTEs (to follow `WITH … ,`) deleting the dependents of the tasks whose ids `taskIds` yields, an
 * expression of type text[]. A statement that read the tasks' rows narrows two of them with the
 * flags those rows carry: `flagged.requestedInput`, the ids of those that ever issued an input
 * request (migration 0009), and `flagged.leased`, of those ever leased (0008). By default, all.
 */
export function deletingDependents(
  { tables }: StoreDatabase,
  taskIds: RawBuilder<unknown>,
  flagged: { requestedInput: RawBuilder<unknown>; leased: RawBuilder<unknown> } = { requestedInput: taskIds, leased: taskIds },
): RawBuilder<unknown> {
  return sql`
    requests_gone AS (DELETE FROM ${tables.input_requests} WHERE task_id = ANY(${flagged.requestedInput})),
    sessions_gone AS (DELETE FROM ${tables.task_sessions} WHERE task_id = ANY(${taskIds})),
    messages_gone AS (DELETE FROM ${tables.task_messages} WHERE task_id = ANY(${taskIds})),
    leases_gone AS (DELETE FROM ${tables.task_leases} WHERE task_id = ANY(${flagged.leased}))`;
}

/**
 * discardTask's transaction: the task in whichever table holds it (live, tombstone, history), then
 * its dependents. Whether a row was removed.
 */
export function discardWithDependents(
  { db }: StoreDatabase,
  statements: TaskStatements,
  taskId: string,
  lockTimeout: string,
): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    const discard = async () => (await statements.discard.execute(trx, { taskId, lockTimeout })).rows[0]!.removed > 0;
    // A reaper moving the task to the tombstones while this statement waits for the row leaves
    // it in neither table as this statement's snapshot sees them. The move happens at most
    // once, so a second statement, with a fresh snapshot, finds the tombstone.
    const removed = (await discard()) || (await discard());
    // Likewise a session or message the SDK added while the row was awaited: a later statement
    // sees it, and once the row is gone none can be added.
    await statements.discardDependents.execute(trx, { taskId });
    return removed;
  });
}
