/**
 * The retention limits' SQL: the per-owner quota, checked under an advisory lock, and the
 * content-free failure an oversized outcome leaves. (Payload sizes are measured in the store,
 * before any SQL, by the contract's rules.)
 */
import { sql } from 'kysely';
import { RETENTION_FAILURE_ERROR, statusMessages } from '../contract/messages.js';
import { ownerQuotaExceeded } from '../contract/retention.js';
import { compileQuery } from './compiled-query.js';
import { endingLeases, leaseAllows } from './lease-statements.js';
import type { StoreDatabase } from './tables.js';
import { COUNT_CHANGED, recordingTransition, TRANSITION_COLUMNS, type Changed } from './task-history.js';
import { isLive, isOpen, withinLockTimeout } from './task-rows.js';
import type { NewTask } from './task-statements.js';

function retentionStatements(database: StoreDatabase) {
  const { db, tables } = database;
  return {
    /** Creations for one owner take turns, so two cannot both see room for one more task. */
    lockOwner: compileQuery<{ lockName: string }, never>(db, (param) => sql`
      SELECT pg_advisory_xact_lock(hashtextextended(${param('lockName')}, 0))`),

    liveTasksOf: compileQuery<{ owner: string | null }, { live: number }>(db, (param) => sql`
      SELECT count(*)::int AS live FROM ${tables.tasks}
       WHERE owner IS NOT DISTINCT FROM ${param('owner')}::text AND ${isLive}`),

    failForRetention: compileQuery<{ taskId: string; lockTimeout: string; runnerId: string }, Changed>(db, (param) =>
      recordingTransition(
        database,
        sql`
          UPDATE ${tables.tasks}
             SET previous_status = status, status = 'failed', status_message = ${statusMessages.retentionFailed},
                 error = ${JSON.stringify(RETENTION_FAILURE_ERROR)}::jsonb,
                 arguments = 'null'::jsonb, meta = NULL, runner_id = NULL, last_updated_at = now()
           WHERE task_id = ${param('taskId')} AND ${leaseAllows(param('runnerId'))}
             AND ${isOpen} AND ${isLive} AND ${withinLockTimeout(param('lockTimeout'))}
          RETURNING ${TRANSITION_COLUMNS}`,
        COUNT_CHANGED,
        endingLeases(database, sql`SELECT task_id FROM changed WHERE leased`),
      ),
    ),

    dropRequests: compileQuery<{ taskId: string }, never>(db, (param) =>
      db.deleteFrom('input_requests').where('task_id', '=', param('taskId')),
    ),
  };
}

export class RetentionEnforcer {
  private readonly statements: ReturnType<typeof retentionStatements>;

  constructor(
    private readonly database: StoreDatabase,
    /** null: no quota. */
    private readonly maxTasksPerOwner: number | null,
  ) {
    this.statements = retentionStatements(database);
  }

  /**
   * Inserts the task by `inserting` (the statement that writes it, and its lease if any): one
   * statement, or with a quota, a transaction that checks it first.
   */
  async insert<R>(task: NewTask, inserting: (db: StoreDatabase['db']) => Promise<{ rows: R[] }>): Promise<R> {
    const max = this.maxTasksPerOwner;
    if (max === null) return (await inserting(this.database.db)).rows[0]!;
    return this.database.db.transaction().execute(async (trx) => {
      const lockName = `${this.database.schema} owner ${JSON.stringify(task.owner)}`;
      await this.statements.lockOwner.execute(trx, { lockName });
      const { rows } = await this.statements.liveTasksOf.execute(trx, { owner: task.owner });
      if (rows[0]!.live >= max) throw ownerQuotaExceeded(max);
      return (await inserting(trx)).rows[0]!;
    });
  }

  /**
   * Ends an open task as a content-free failure its waiters can see: the rejected payload is not
   * kept, and nothing of what the task was told is either. False when the task was not open.
   */
  failForRetention(taskId: string, lockTimeout: string, runnerId: string): Promise<boolean> {
    return this.database.db.transaction().execute(async (trx) => {
      const { rows } = await this.statements.failForRetention.execute(trx, { taskId, lockTimeout, runnerId });
      if (rows[0]!.changed === 0) return false;
      await this.statements.dropRequests.execute(trx, { taskId });
      return true;
    });
  }
}
