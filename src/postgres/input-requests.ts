/**
 * The input-request protocol on PostgreSQL: `requireInput`, `applyInputResponses` and the reads of
 * a task's requests and answers, with all their SQL.
 *
 * `input_requests` holds one row per key a task ever issued (outstanding, answered or superseded),
 * so its primary key makes a key's reuse for a second request impossible. The rules (which keys are
 * spent, which answers count) are the contract's, shared with the memory store. They span rows, so
 * each transition locks the task row first (SELECT … FOR UPDATE) and reads the keys under that
 * lock: two concurrent calls cannot both admit a key.
 */
import { sql, type Transaction } from 'kysely';
import { checkKeysReusable, classifyResponses, type IssuedKey } from '../contract/input-requests.js';
import { compareKeys, sortedKeys } from '../contract/json.js';
import { statusMessages } from '../contract/messages.js';
import { checkedPayload } from '../contract/retention.js';
import type { AppliedInputResponses, InputRequests, InputResponses, TaskStatus } from '../contract/types.js';
import { compileQuery } from './compiled-query.js';
import type { InputRequestState, StoreDatabase, TaskDatabase } from './tables.js';
import { leaseAllows } from './lease-statements.js';
import { isLive, isOpen, withinLockTimeout } from './task-rows.js';
import type { TaskStatements } from './task-statements.js';

type KeyValue = { key: string | null; value: Record<string, unknown> | null };

function inputRequestStatements(database: StoreDatabase) {
  const { db, tables } = database;
  /** One state's rows of a live task (none unless `onlyWhileWaiting` holds); no row: not live. */
  const rowsIn = (state: 'outstanding' | 'answered') =>
    compileQuery<{ taskId: string }, KeyValue>(db, (param) => sql`
      SELECT r.request_key AS key, ${state === 'outstanding' ? sql`r.request` : sql`r.response`} AS value
        FROM ${tables.tasks} AS t
        LEFT JOIN ${tables.input_requests} AS r
          ON r.task_id = t.task_id AND r.state = ${sql.lit(state)}
         AND ${state === 'outstanding' ? sql`t.status = 'input_required'` : sql`true`}
       WHERE t.task_id = ${param('taskId')} AND ${isLive}`);

  return {
    /**
     * Locks a live, open task row for the rest of the transaction; its status, or no row. With a
     * runner, none either when another runner holds the task's lease.
     */
    lockOpenTask: compileQuery<{ taskId: string; lockTimeout: string; runnerId: string | null }, { status: TaskStatus }>(db, (param) =>
      db
        .selectFrom('tasks')
        .select('status')
        .where('task_id', '=', param('taskId'))
        .where(leaseAllows(param('runnerId')))
        .where(isOpen)
        .where(isLive)
        .where(withinLockTimeout(param('lockTimeout')))
        .forUpdate(),
    ),

    issuedKeys: compileQuery<{ taskId: string; keys: string[] }, { request_key: string; request: unknown; state: InputRequestState }>(
      db,
      (param) =>
        db
          .selectFrom('input_requests')
          .select(['request_key', 'request', 'state'])
          .where('task_id', '=', param('taskId'))
          .where('request_key', '=', sql<string>`ANY(${param('keys')}::text[])`),
    ),

    /** Keys left out are superseded; identical reissues of outstanding keys are already there. */
    replaceOutstanding: compileQuery<{ taskId: string; keys: string[]; requestsJson: string }, never>(db, (param) => sql`
      WITH superseded AS (
        UPDATE ${tables.input_requests} SET state = 'superseded', settled_at = now()
         WHERE task_id = ${param('taskId')} AND state = 'outstanding' AND NOT (request_key = ANY(${param('keys')}::text[]))
      )
      INSERT INTO ${tables.input_requests} (task_id, request_key, request, state, issued_at)
      SELECT ${param('taskId')}, key, value, 'outstanding', now() FROM jsonb_each(${param('requestsJson')}::jsonb)
      ON CONFLICT (task_id, request_key) DO NOTHING`),

    outstandingKeys: compileQuery<{ taskId: string }, { request_key: string }>(db, (param) =>
      db
        .selectFrom('input_requests')
        .select('request_key')
        .where('task_id', '=', param('taskId'))
        .where('state', '=', 'outstanding'),
    ),

    recordAnswers: compileQuery<{ taskId: string; answersJson: string }, never>(db, (param) => sql`
      UPDATE ${tables.input_requests} AS r
         SET state = 'answered', response = a.value, settled_at = now()
        FROM jsonb_each(${param('answersJson')}::jsonb) AS a
       WHERE r.task_id = ${param('taskId')} AND r.request_key = a.key`),

    outstandingRows: rowsIn('outstanding'),
    answeredRows: rowsIn('answered'),
  };
}

export class InputRequestProtocol {
  private readonly statements: ReturnType<typeof inputRequestStatements>;

  constructor(
    private readonly database: StoreDatabase,
    /** setStatus is the status change here too: under the row's lock, its guard holds. */
    private readonly taskStatements: Pick<TaskStatements, 'setStatus'>,
    private readonly maxPayloadBytes: number,
    /** Told of each status change once its transaction has committed. */
    private readonly onTransition: (taskId: string, status: TaskStatus) => void,
  ) {
    this.statements = inputRequestStatements(database);
  }

  /**
   * `requireInput` on a valid id, under the task row's lock. `lockTimeout` bounds every lock wait
   * of the transaction (see task-gate.ts).
   */
  async require(taskId: string, requests: InputRequests, message: string | null, lockTimeout: string, runnerId: string): Promise<boolean> {
    const keys = sortedKeys(Object.keys(requests));
    const before = await this.database.db.transaction().execute(async (trx) => {
      const status = await this.lockOpenTask(trx, taskId, lockTimeout, runnerId);
      if (!status) return null;
      for (const key of keys) checkedPayload(`requests.${key}`, requests[key], this.maxPayloadBytes);
      if (message !== null) checkedPayload('message', message, this.maxPayloadBytes);
      const { rows } = await this.statements.issuedKeys.execute(trx, { taskId, keys });
      const issued = new Map(
        rows.map((row): [string, IssuedKey] => [
          row.request_key,
          row.state === 'outstanding' ? { state: 'outstanding', request: row.request } : { state: 'spent' },
        ]),
      );
      checkKeysReusable(requests, (key) => issued.get(key));
      await this.statements.replaceOutstanding.execute(trx, { taskId, keys, requestsJson: JSON.stringify(requests) });
      await this.taskStatements.setStatus.execute(trx, {
        taskId,
        status: 'input_required',
        message: message ?? statusMessages.inputRequired,
        lockTimeout,
        runnerId,
      });
      return status;
    });
    if (before === null) return false;
    if (before !== 'input_required') this.onTransition(taskId, 'input_required');
    return true;
  }

  /**
   * `applyInputResponses` on a valid id, under the task row's lock, like {@link require}. Answers
   * come from the client, through any instance, so a lease does not refuse them.
   */
  async apply(taskId: string, responses: InputResponses, lockTimeout: string): Promise<AppliedInputResponses | null> {
    const applied = await this.database.db.transaction().execute(async (trx) => {
      const status = await this.lockOpenTask(trx, taskId, lockTimeout, null);
      if (!status) return null;
      const waiting = status === 'input_required';
      const outstanding = waiting ? (await this.statements.outstandingKeys.execute(trx, { taskId })).rows : [];
      const outcome = classifyResponses(Object.keys(responses), new Set(outstanding.map((row) => row.request_key)));
      const answers = Object.fromEntries(outcome.accepted.map((key) => [key, responses[key]]));
      for (const key of outcome.accepted) checkedPayload(`responses.${key}`, responses[key], this.maxPayloadBytes);
      const resume = waiting && outcome.complete;

      if (outcome.accepted.length > 0) {
        await this.statements.recordAnswers.execute(trx, { taskId, answersJson: JSON.stringify(answers) });
      }
      if (outcome.accepted.length > 0 || resume) {
        await this.taskStatements.setStatus.execute(trx, {
          taskId,
          status: resume ? 'working' : status,
          message: resume ? statusMessages.resumed : null,
          lockTimeout,
          runnerId: null,
        });
      }
      return { outcome, resume };
    });
    if (applied?.resume) this.onTransition(taskId, 'working');
    return applied?.outcome ?? null;
  }

  /** Requests still waiting for an answer, or null if the task is not live. */
  async outstanding(taskId: string): Promise<InputRequests | null> {
    return (await this.read('outstandingRows', taskId)) as InputRequests | null;
  }

  /** Every answer so far, or null if the task is not live. */
  async answered(taskId: string): Promise<InputResponses | null> {
    return (await this.read('answeredRows', taskId)) as InputResponses | null;
  }

  private async read(statement: 'outstandingRows' | 'answeredRows', taskId: string) {
    const { rows } = await this.statements[statement].execute(this.database.db, { taskId });
    if (rows.length === 0) return null;
    const entries = rows
      .filter((row): row is { key: string; value: Record<string, unknown> } => row.key !== null)
      .map((row): [string, Record<string, unknown>] => [row.key, row.value]);
    return Object.fromEntries(entries.sort(([a], [b]) => compareKeys(a, b)));
  }

  private async lockOpenTask(
    trx: Transaction<TaskDatabase>,
    taskId: string,
    lockTimeout: string,
    runnerId: string | null,
  ): Promise<TaskStatus | null> {
    const { rows } = await this.statements.lockOpenTask.execute(trx, { taskId, lockTimeout, runnerId });
    return rows[0]?.status ?? null;
  }
}
