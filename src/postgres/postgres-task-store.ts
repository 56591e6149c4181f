/**
 * The TaskStore on PostgreSQL: tasks survive restarts, are visible to every instance, and can be
 * read with plain SQL (see migrations/ for the schema).
 *
 * Every transition is one transaction holding the task row's lock. Where the rule fits in a WHERE
 * clause it is one guarded UPDATE (one round trip); where it spans rows (input requests and their
 * spent keys) the row is locked with SELECT … FOR UPDATE first. Expiry is always decided by the
 * database clock inside the statement, so instances with skewed clocks agree.
 */
import { Kysely, PostgresDialect, sql, type Transaction } from 'kysely';
import pg from 'pg';
import { CancellationToken } from '../contract/cancellation.js';
import { TaskStoreError } from '../contract/errors.js';
import { generateTaskId } from '../contract/ids.js';
import { RETENTION_FAILURE_ERROR, statusMessages } from '../contract/messages.js';
import { checkLimits, DEFAULT_MAX_PAYLOAD_BYTES, payloadBytes, payloadTooLarge } from '../contract/retention.js';
import { compareKeys, sameJson, sortedKeys } from '../contract/json.js';
import {
  isTerminal,
  type AppliedInputResponses,
  type CallToolResult,
  type CreateTaskInput,
  type InputRequests,
  type InputResponses,
  type JsonRpcError,
  type ListTasksOptions,
  type RetentionLimits,
  type TaskObject,
  type TaskPage,
  type TaskPresence,
  type TaskResumeContext,
  type TaskSnapshot,
  type TaskStatus,
  type TaskStore,
} from '../contract/types.js';
import {
  callToolResultSchema,
  createTaskInputSchema,
  DEFAULT_PAGE_LIMIT,
  DEFAULT_TTL_MS,
  inputRequestsSchema,
  inputResponsesSchema,
  isIssuableTaskId,
  jsonRpcErrorSchema,
  listTasksOptionsSchema,
  messageSchema,
  metaSchema,
  parse,
  statusSchema,
  taskIdSchema,
  taskIdsSchema,
  ttlSchema,
  waitOptionsSchema,
} from '../contract/validation.js';
import { toBackendError } from './backend-error.js';
import { decodeCursor, encodeCursor } from '../contract/list-cursor.js';
import { listenerFor, type NotificationListener, type ListenerState, type ListenerStateChange } from './listener.js';
import { createPool, dialectPool, guardPool } from './pool.js';
import { Reaper, reaperOptionsSchema, type ReaperOptions, type ReaperPass } from './reaper.js';
import { notificationChannel, validateSchemaName } from './schema-name.js';
import type { TaskDatabase } from './tables.js';
import { isLive, isOpen, msUntilExpiry, TASK_OBJECT_COLUMNS, toSnapshot, toTaskObject, type TaskObjectRow } from './task-rows.js';
import { recordingTransition, TRANSITION_COLUMNS } from './task-history.js';
import { COUNT_CHANGED, taskStatements, type Changed, type NewTask, type TaskStatements } from './task-statements.js';
import { TaskWatcher } from './task-watcher.js';
import { PostgresTaskChanges } from './task-changes.js';
import type { TaskChangeFeed, TaskWatch } from '../contract/task-changes.js';

export interface PostgresTaskStoreOptions {
  /** A pool the caller owns; `close()` leaves it open. */
  pool?: pg.Pool;
  /** Or: the store creates and owns its pool. */
  connectionString?: string;
  /** Default 'mcp_tasks'. Must already be migrated (see `migrate`). */
  schema?: string;
  /** Default 300000. */
  defaultTtlMs?: number;
  /** `maxPayloadBytes` (default 4 MiB) and `maxTasksPerOwner` (default none). */
  limits?: RetentionLimits;
  /**
   * LISTEN/NOTIFY. `false` = poll-only (e.g. behind PgBouncer in transaction mode);
   * `connectionString` = a direct connection for the listener alone. Default: listen on a
   * connection made with the pool's settings.
   */
  listen?: false | { connectionString?: string };
  /**
   * The automatic reaper. `false` = never reap automatically (`reapExpired()` still works).
   * Defaults: every 30 s, tombstones kept 5 min, batches of 1000 rows.
   */
  reaper?: false | ReaperOptions;
  /**
   * Run statements as named prepared statements, parsed and planned once per connection.
   * Default true; set false behind PgBouncer older than 1.21 in transaction mode.
   */
  preparedStatements?: boolean;
}

export class PostgresTaskStore implements TaskStore, TaskChangeFeed {
  readonly schema: string;
  private readonly db: Kysely<TaskDatabase>;
  private readonly pool: pg.Pool;
  private readonly connectionString: string | undefined;
  private readonly defaultTtlMs: number;
  private readonly maxPayloadBytes: number;
  private readonly maxTasksPerOwner: number | undefined;
  private readonly listener: NotificationListener | null;
  private readonly statements: TaskStatements;
  private readonly watcher: TaskWatcher;
  private readonly changes: PostgresTaskChanges;
  private readonly reaper: Reaper;
  /** Ends the pool if the store created it; otherwise stops listening on the caller's pool. */
  private readonly releasePool: () => Promise<void>;
  private closed = false;

  constructor(options: PostgresTaskStoreOptions) {
    this.schema = validateSchemaName(options.schema);
    this.defaultTtlMs = options.defaultTtlMs === undefined ? DEFAULT_TTL_MS : parse(ttlSchema, options.defaultTtlMs, 'defaultTtlMs');
    checkLimits(options.limits);
    if (options.limits?.maxTasks !== undefined || options.limits?.maxRetainedBytes !== undefined) {
      throw new TaskStoreError(
        'invalid_input',
        'invalid limits: maxTasks and maxRetainedBytes bound a process’s memory and do not apply to PostgresTaskStore; use maxPayloadBytes and maxTasksPerOwner',
      );
    }
    this.maxPayloadBytes = options.limits?.maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD_BYTES;
    this.maxTasksPerOwner = options.limits?.maxTasksPerOwner;
    if (!options.pool && !options.connectionString) {
      throw new TaskStoreError('invalid_input', 'invalid options: give a pool or a connectionString');
    }
    this.connectionString = options.connectionString;
    this.pool = options.pool ?? createPool(options.connectionString, 10);
    const stopGuarding = options.pool ? guardPool(options.pool) : null;
    this.releasePool = stopGuarding ? async () => stopGuarding() : () => this.pool.end();
    const pool = dialectPool(this.pool, { preparedStatements: options.preparedStatements !== false });
    this.db = new Kysely<TaskDatabase>({ dialect: new PostgresDialect({ pool }) }).withSchema(this.schema);

    this.statements = taskStatements(this.db, this.schema);
    this.listener = listenerFor(options.listen, this.pool, notificationChannel(this.schema));
    this.watcher = new TaskWatcher({ db: this.db, listener: this.listener, schema: this.schema });
    this.changes = new PostgresTaskChanges({ db: this.db, listener: this.listener });
    this.reaper = new Reaper(
      this.db,
      this.schema,
      options.reaper === false ? { intervalMs: null } : parse(reaperOptionsSchema, options.reaper ?? {}, 'reaper'),
    );
    this.listener?.start();
    this.reaper.start();
  }

  /** Where the listener is now: `disabled` in poll-only mode. Useful for a health check. */
  get listenerState(): ListenerState | 'disabled' {
    return this.listener?.currentState ?? 'disabled';
  }

  /**
   * Observes the listener: `connecting`, `listening`, `reconnecting` (with the error and the delay
   * before the next attempt) and `closed`. Returns a function that unsubscribes.
   */
  onListenerStateChange(callback: (change: ListenerStateChange) => void): () => void {
    if (!this.listener) return () => {};
    return this.listener.onStateChange(callback);
  }

  /**
   * Observes reaper passes, automatic or by hand: their counts, or the error that ended one.
   * Returns a function that unsubscribes.
   */
  onReaperPass(callback: (outcome: ReaperPass | TaskStoreError) => void): () => void {
    return this.reaper.onPass((outcome) =>
      callback(outcome instanceof Error ? toBackendError(outcome, this.connectionString) : outcome),
    );
  }

  /** One reaper pass: expired rows become tombstones, and old tombstones are purged. */
  reapExpired(): Promise<{ tombstoned: number; purged: number }> {
    return this.run(() => this.reaper.runOnce());
  }

  async createTask(input: CreateTaskInput): Promise<{ taskId: string; token: CancellationToken }> {
    const parsed = parse(createTaskInputSchema, input, 'input');
    const owner = parsed.owner ?? null;
    const argumentsJson = JSON.stringify(parsed.arguments ?? null);
    this.checkPayload('toolName', JSON.stringify(parsed.toolName));
    this.checkPayload('arguments', argumentsJson);
    this.checkPayload('owner', JSON.stringify(owner));
    const ttlMs = parsed.ttlMs === undefined ? this.defaultTtlMs : parsed.ttlMs;
    const taskId = generateTaskId();
    const task: NewTask = {
      taskId,
      owner,
      toolName: parsed.toolName,
      argumentsJson,
      statusMessage: statusMessages.created,
      ttlMs,
      pollIntervalMs: parsed.pollIntervalMs ?? null,
    };
    const insert = (db: Kysely<TaskDatabase>) => this.statements.insert.execute(db, task);

    const row = await this.run(async () => {
      if (this.maxTasksPerOwner === undefined) return (await insert(this.db)).rows[0]!;
      // The quota is a rule over many rows: creations for one owner take turns under an
      // advisory lock, so two concurrent creations cannot both see room for one more task.
      return this.db.transaction().execute(async (trx) => {
        await sql`SELECT pg_advisory_xact_lock(hashtextextended(${`${this.schema} owner ${JSON.stringify(owner)}`}, 0))`.execute(trx);
        const { rows } = await sql<{ live: number }>`
          SELECT count(*)::int AS live FROM ${this.table('tasks')}
           WHERE ${owner === null ? sql`owner IS NULL` : sql`owner = ${owner}`} AND ${isLive}`.execute(trx);
        if (rows[0]!.live >= this.maxTasksPerOwner!) {
          throw new TaskStoreError(
            'retention_limit_exceeded',
            `task retention per-owner limit exceeded (maximum ${this.maxTasksPerOwner} live tasks per owner)`,
          );
        }
        return (await insert(trx)).rows[0]!;
      });
    });
    return { taskId, token: this.watcher.holdToken(taskId, row.ms_until_expiry) };
  }

  async taskOwner(taskId: string): Promise<{ owner: string | null } | null> {
    if (!this.isKnowable(taskId)) return null;
    const row = await this.run(() =>
      this.db.selectFrom('tasks').select('owner').where('task_id', '=', taskId).where(isLive).executeTakeFirst(),
    );
    return row ? { owner: row.owner } : null;
  }

  /**
   * One statement, so one snapshot: a task the reaper moves to the tombstones meanwhile is seen
   * either as a live row or as a tombstone, never as neither.
   */
  async taskPresence(taskId: string): Promise<TaskPresence> {
    if (!this.isKnowable(taskId)) return { state: 'missing' };
    const { rows } = await this.run(() =>
      sql<{ live: boolean; owner: string | null }>`
        SELECT ${isLive} AS live, owner FROM ${this.table('tasks')} WHERE task_id = ${taskId}
        UNION ALL
        SELECT false, owner FROM ${this.table('tombstones')} WHERE task_id = ${taskId}
        LIMIT 1`.execute(this.db),
    );
    const row = rows[0];
    if (!row) return { state: 'missing' };
    return { state: row.live ? 'present' : 'expired', owner: row.owner };
  }

  async getTask(taskId: string): Promise<TaskObject | null> {
    if (!this.isKnowable(taskId)) return null;
    const { rows } = await this.run(() => this.statements.taskObject.execute(this.db, { taskId }));
    return rows[0] ? toTaskObject(rows[0]) : null;
  }

  async getTaskResult(taskId: string): Promise<TaskSnapshot | null> {
    if (!this.isKnowable(taskId)) return null;
    const { rows } = await this.run(() => this.statements.snapshot.execute(this.db, { taskId }));
    return rows[0] ? toSnapshot(rows[0]) : null;
  }

  /**
   * Resolves once the task is terminal (its snapshot) or expired or gone (`null`). Wakes on a
   * NOTIFY from whichever instance settles the task, with a slow poll while the listener is down.
   * Rejects with the signal's reason when aborted, and with a `backend` error if the store closes.
   */
  async waitForCompletion(taskId: string, options?: { signal?: AbortSignal }): Promise<TaskSnapshot | null> {
    const id = parse(taskIdSchema, taskId, 'taskId');
    const signal = parse(waitOptionsSchema, options, 'options')?.signal;
    if (signal?.aborted) throw signal.reason;
    this.assertOpen();
    if (!isIssuableTaskId(id)) return null;
    try {
      return await this.watcher.waitForCompletion(id, signal);
    } catch (error) {
      if (signal?.aborted && error === signal.reason) throw error;
      throw toBackendError(error, this.connectionString);
    }
  }

  /**
   * Reports changes to the given tasks made on any instance (see {@link TaskChangeFeed}), as the
   * NOTIFY trigger announces them; resolves once the tasks are flagged for announcement.
   */
  async watchTasks(taskIds: readonly string[], onChange: (taskId: string) => void): Promise<TaskWatch> {
    const ids = parse(taskIdsSchema, taskIds, 'taskIds');
    this.assertOpen();
    return this.run(() => this.changes.watch(ids.filter(isIssuableTaskId), onChange));
  }

  async listTasks(options: ListTasksOptions = {}): Promise<TaskPage> {
    const parsed = parse(listTasksOptionsSchema, options, 'options');
    const after = parsed.cursor === undefined ? null : decodeCursor(parsed.cursor);
    const limit = parsed.limit ?? DEFAULT_PAGE_LIMIT;
    const rows = await this.run(() => {
      let query = this.db.selectFrom('tasks').select(TASK_OBJECT_COLUMNS).where(isLive);
      if (parsed.status !== undefined) query = query.where('status', '=', parsed.status);
      if (parsed.owner !== undefined) {
        query = parsed.owner === null ? query.where('owner', 'is', null) : query.where('owner', '=', parsed.owner);
      }
      if (after) {
        query = query.where(
          sql<boolean>`(created_at, task_id) > (to_timestamp(${after.createdAtMs}::float8 / 1000), ${after.taskId})`,
        );
      }
      return query.orderBy('created_at').orderBy('task_id').limit(limit + 1).execute();
    });
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return {
      tasks: page.map(toTaskObject),
      nextCursor:
        rows.length > limit && last ? encodeCursor({ createdAtMs: last.created_at.getTime(), taskId: last.task_id }) : null,
    };
  }

  /**
   * Replaces the outstanding set. The spent-key rule spans rows, so the task row is locked first
   * and the keys are read under that lock: two concurrent calls cannot both admit a key.
   */
  async requireInput(taskId: string, requests: InputRequests, message?: string | null): Promise<boolean> {
    const id = parse(taskIdSchema, taskId, 'taskId');
    const parsedRequests = parse(inputRequestsSchema, requests, 'requests') as InputRequests;
    const parsedMessage = parse(messageSchema, message, 'message');
    if (!isIssuableTaskId(id)) return false;
    const keys = sortedKeys(Object.keys(parsedRequests));
    const requestJson = Object.fromEntries(keys.map((key) => [key, JSON.stringify(parsedRequests[key])]));

    return this.run(() =>
      this.db.transaction().execute(async (trx) => {
        if (!(await this.lockOpenTask(trx, id))) return false;
        for (const key of keys) this.checkPayload(`requests.${key}`, requestJson[key]!);
        if (parsedMessage != null) this.checkPayload('message', JSON.stringify(parsedMessage));

        const issued = await trx
          .selectFrom('input_requests')
          .select(['request_key', 'request', 'state'])
          .where('task_id', '=', id)
          .where('request_key', '=', sql<string>`ANY(${keys}::text[])`)
          .execute();
        const reused = issued
          .filter((row) => row.state !== 'outstanding' || !sameJson(row.request, parsedRequests[row.request_key]))
          .map((row) => row.request_key)
          .sort(compareKeys);
        if (reused.length > 0) {
          throw new TaskStoreError(
            'invalid_transition',
            `input request keys must be unique over a task's lifetime, but ${reused.join(', ')} already ${reused.length === 1 ? 'was' : 'were'} used by this task; use a new key to ask again`,
          );
        }
        // Keys left out are superseded; identical reissues of outstanding keys are already there.
        await sql`
          WITH superseded AS (
            UPDATE ${this.table('input_requests')} SET state = 'superseded', settled_at = now()
             WHERE task_id = ${id} AND state = 'outstanding' AND NOT (request_key = ANY(${keys}::text[]))
          )
          INSERT INTO ${this.table('input_requests')} (task_id, request_key, request, state, issued_at)
          SELECT ${id}, key, value, 'outstanding', now() FROM jsonb_each(${JSON.stringify(parsedRequests)}::jsonb)
          ON CONFLICT (task_id, request_key) DO NOTHING`.execute(trx);
        await recordingTransition(
          this.schema,
          sql`
            UPDATE ${this.table('tasks')}
               SET previous_status = status, status = 'input_required',
                   status_message = ${parsedMessage ?? statusMessages.inputRequired}, last_updated_at = now()
             WHERE task_id = ${id}
            RETURNING ${TRANSITION_COLUMNS}`,
          COUNT_CHANGED,
        ).execute(trx);
        return true;
      }),
    );
  }

  /** Requests still waiting for an answer; `{}` unless the task is `input_required`. */
  async outstandingInputRequests(taskId: string): Promise<InputRequests | null> {
    const rows = await this.readInputRows(taskId, 'outstanding');
    if (rows === null) return null;
    return Object.fromEntries(rows.map((row) => [row.key, row.value])) as InputRequests;
  }

  async applyInputResponses(taskId: string, responses: InputResponses): Promise<AppliedInputResponses | null> {
    const id = parse(taskIdSchema, taskId, 'taskId');
    const parsed = parse(inputResponsesSchema, responses, 'responses') as InputResponses;
    if (!isIssuableTaskId(id)) return null;

    return this.run(() =>
      this.db.transaction().execute(async (trx) => {
        const status = await this.lockOpenTask(trx, id);
        if (!status) return null;
        // Only a task waiting for input takes answers, whatever requests it once issued.
        const outstanding = new Set(
          status !== 'input_required'
            ? []
            : (
                await trx
                  .selectFrom('input_requests')
                  .select('request_key')
                  .where('task_id', '=', id)
                  .where('state', '=', 'outstanding')
                  .execute()
              ).map((row) => row.request_key),
        );
        const keys = sortedKeys(Object.keys(parsed));
        const accepted = keys.filter((key) => outstanding.has(key));
        const ignored = keys.filter((key) => !outstanding.has(key));
        const stillOutstanding = sortedKeys([...outstanding].filter((key) => !Object.hasOwn(parsed, key)));
        const answers = Object.fromEntries(accepted.map((key) => [key, parsed[key]]));
        for (const key of accepted) this.checkPayload(`responses.${key}`, JSON.stringify(parsed[key]));
        const resume = stillOutstanding.length === 0 && status === 'input_required';

        if (accepted.length > 0) {
          await sql`
            UPDATE ${this.table('input_requests')} AS r
               SET state = 'answered', response = a.value, settled_at = now()
              FROM jsonb_each(${JSON.stringify(answers)}::jsonb) AS a
             WHERE r.task_id = ${id} AND r.request_key = a.key`.execute(trx);
        }
        if (accepted.length > 0 || resume) {
          await recordingTransition(
            this.schema,
            sql`
              UPDATE ${this.table('tasks')}
                 SET previous_status = status, status = ${resume ? 'working' : status},
                     status_message = ${resume ? sql`${statusMessages.resumed}` : sql`status_message`},
                     last_updated_at = now()
               WHERE task_id = ${id}
              RETURNING ${TRANSITION_COLUMNS}`,
            COUNT_CHANGED,
          ).execute(trx);
        }
        return { accepted, ignored, stillOutstanding, complete: stillOutstanding.length === 0 };
      }),
    );
  }

  /** Every answer accumulated so far, across rounds. */
  async inputResponses(taskId: string): Promise<InputResponses | null> {
    const rows = await this.readInputRows(taskId, 'answered');
    if (rows === null) return null;
    return Object.fromEntries(rows.map((row) => [row.key, row.value])) as InputResponses;
  }

  /**
   * What a handler needs to run again after its questions were answered. The token is the one
   * `createTask` returned when that was on this instance; elsewhere it is a token this instance
   * raises on the same signals (cancellation by any instance, the TTL deadline).
   */
  async resumeContext(taskId: string): Promise<TaskResumeContext | null> {
    if (!this.isKnowable(taskId)) return null;
    const { rows } = await this.run(() =>
      sql<{
        tool_name: string;
        arguments: unknown;
        cancel_requested: boolean;
        ms_until_expiry: number | null;
        answers: [string, Record<string, unknown>][] | null;
      }>`
        SELECT t.tool_name, t.arguments, t.cancel_requested_at IS NOT NULL AS cancel_requested, ${msUntilExpiry},
               (SELECT jsonb_agg(jsonb_build_array(r.request_key, r.response))
                  FROM ${this.table('input_requests')} AS r
                 WHERE r.task_id = t.task_id AND r.state = 'answered') AS answers
          FROM ${this.table('tasks')} AS t
         WHERE t.task_id = ${taskId} AND ${isLive}`.execute(this.db),
    );
    const row = rows[0];
    if (!row) return null;
    const answers = (row.answers ?? []).sort(([a], [b]) => compareKeys(a, b));
    return {
      toolName: row.tool_name,
      arguments: row.arguments,
      inputResponses: Object.fromEntries(answers) as InputResponses,
      token: this.watcher.tokenFor(taskId, { cancelRequested: row.cancel_requested, msUntilExpiry: row.ms_until_expiry }),
    };
  }

  /** Progress reporting for a running task; terminal states are reached by their own methods. */
  async setStatus(taskId: string, status: TaskStatus, message?: string | null): Promise<boolean> {
    const id = parse(taskIdSchema, taskId, 'taskId');
    const parsedStatus = parse(statusSchema, status, 'status');
    const parsedMessage = parse(messageSchema, message, 'message');
    if (isTerminal(parsedStatus)) {
      throw new TaskStoreError(
        'invalid_transition',
        `set_status is for non-terminal progress; use completeTask, failTask, or cancelTask to reach ${parsedStatus}`,
      );
    }
    if (!isIssuableTaskId(id)) return false;
    if (parsedMessage != null) await this.checkPayloadOfOpenTask(id, 'message', JSON.stringify(parsedMessage));
    const { rows } = await this.run(() =>
      this.statements.setStatus.execute(this.db, { taskId: id, status: parsedStatus, message: parsedMessage ?? null }),
    );
    return rows[0]!.changed > 0;
  }

  /**
   * Moves the deadline (measured from creation) on any live task, terminal or not. A deadline in
   * the past expires the task at once and raises its token wherever that token is held.
   */
  async setTtl(taskId: string, ttlMs: number): Promise<boolean> {
    const id = parse(taskIdSchema, taskId, 'taskId');
    const ttl = parse(ttlSchema, ttlMs, 'ttlMs');
    if (!isIssuableTaskId(id)) return false;
    const row = await this.run(() =>
      this.db
        .updateTable('tasks')
        .set({
          ttl_ms: ttl,
          expires_at: sql<Date>`created_at + ${ttl}::float8 * interval '1 millisecond'`,
          last_updated_at: sql<Date>`now()`,
        })
        .where('task_id', '=', id)
        .where(isLive)
        .returning(msUntilExpiry)
        .executeTakeFirst(),
    );
    if (!row) return false;
    this.watcher.deadlineMoved(id, row.ms_until_expiry);
    return true;
  }

  /** Replaces `_meta`, on terminal tasks too, without touching `lastUpdatedAt`. */
  async setTaskMeta(taskId: string, meta: Record<string, unknown>): Promise<boolean> {
    const id = parse(taskIdSchema, taskId, 'taskId');
    const parsed = parse(metaSchema, meta, 'meta');
    if (!isIssuableTaskId(id)) return false;
    const json = JSON.stringify(parsed);
    if (payloadBytes(json) > this.maxPayloadBytes && (await this.taskOwner(id)) !== null) {
      throw payloadTooLarge('meta', payloadBytes(json), this.maxPayloadBytes);
    }
    const result = await this.run(() =>
      this.db.updateTable('tasks').set({ meta: json }).where('task_id', '=', id).where(isLive).executeTakeFirst(),
    );
    return result.numUpdatedRows > 0n;
  }

  /** A result with `isError: true` completes the task: the tool ran and reported a problem. */
  async completeTask(taskId: string, result: CallToolResult): Promise<boolean> {
    const id = parse(taskIdSchema, taskId, 'taskId');
    const json = JSON.stringify(parse(callToolResultSchema, result, 'result'));
    if (!isIssuableTaskId(id)) return false;
    if (payloadBytes(json) > this.maxPayloadBytes) {
      return this.failForRetention(id, payloadTooLarge('result', payloadBytes(json), this.maxPayloadBytes));
    }
    return this.settle({ taskId: id, status: 'completed', message: statusMessages.completed, result: json, error: null });
  }

  /** For a call that produced no result at all; the error is kept whole, `data` included. */
  async failTask(taskId: string, error: JsonRpcError): Promise<boolean> {
    const id = parse(taskIdSchema, taskId, 'taskId');
    const parsed = parse(jsonRpcErrorSchema, error, 'error');
    if (!isIssuableTaskId(id)) return false;
    const json = JSON.stringify(parsed);
    const message = statusMessages.failed(parsed);
    if (payloadBytes(json) > this.maxPayloadBytes) {
      return this.failForRetention(id, payloadTooLarge('error', payloadBytes(json), this.maxPayloadBytes));
    }
    if (payloadBytes(JSON.stringify(message)) > this.maxPayloadBytes) {
      return this.failForRetention(id, payloadTooLarge('error message', payloadBytes(JSON.stringify(message)), this.maxPayloadBytes));
    }
    return this.settle({ taskId: id, status: 'failed', message, result: null, error: json });
  }

  /**
   * Raises the task's token, wherever it is held, even when the task already finished (work still
   * winding down is told to stop), and returns the task as it now is: `cancelled`, or the terminal
   * state it had. `null` for an unknown or expired task.
   */
  async cancelTask(taskId: string, reason?: string | null): Promise<TaskObject | null> {
    const id = parse(taskIdSchema, taskId, 'taskId');
    const parsedReason = parse(messageSchema, reason, 'reason');
    if (!isIssuableTaskId(id)) return null;
    const fits = parsedReason == null || payloadBytes(JSON.stringify(parsedReason)) + 11 <= this.maxPayloadBytes;
    const message = fits ? statusMessages.cancelled(parsedReason) : statusMessages.cancelledOverLimit;
    const { rows } = await this.run(() =>
      recordingTransition<TaskObjectRow>(
        this.schema,
        sql`
          UPDATE ${this.table('tasks')}
             SET previous_status = status,
                 status = CASE WHEN ${isOpen} THEN 'cancelled' ELSE status END,
                 status_message = CASE WHEN ${isOpen} THEN ${message} ELSE status_message END,
                 last_updated_at = CASE WHEN ${isOpen} THEN now() ELSE last_updated_at END,
                 -- clock_timestamp() differs on every call, so each cancel is a change (and a NOTIFY).
                 cancel_requested_at = clock_timestamp()
           WHERE task_id = ${id} AND ${isLive}
          RETURNING ${TRANSITION_COLUMNS}, created_at, ttl_ms, poll_interval_ms, meta`,
        sql.join(TASK_OBJECT_COLUMNS.map((column) => sql.ref(column))),
      ).execute(this.db),
    );
    const row = rows[0];
    if (!row) return null;
    this.watcher.cancelled(id);
    return toTaskObject(row);
  }

  /** Removes a live task or a tombstone, without raising its token. */
  async discardTask(taskId: string): Promise<boolean> {
    const id = parse(taskIdSchema, taskId, 'taskId');
    if (!isIssuableTaskId(id)) return false;
    const discard = () =>
      this.run(async () => {
        const { rows } = await sql<{ removed: number }>`
          WITH live AS (DELETE FROM ${this.table('tasks')} WHERE task_id = ${id} RETURNING 1),
               dead AS (DELETE FROM ${this.table('tombstones')} WHERE task_id = ${id} RETURNING 1),
               history AS (DELETE FROM ${this.table('task_history')} WHERE task_id = ${id})
          SELECT (SELECT count(*) FROM live)::int + (SELECT count(*) FROM dead)::int AS removed`.execute(this.db);
        return rows[0]!.removed > 0;
      });
    // A reaper moving the task to the tombstones while this statement waits for the row leaves it
    // in neither table as this statement's snapshot sees them. The move happens at most once, so
    // a second statement, with a fresh snapshot, finds the tombstone.
    const removed = (await discard()) || (await discard());
    this.watcher.discarded(id);
    return removed;
  }

  /**
   * Stops the reaper and the listener, rejects pending `waitForCompletion` calls with a `backend`
   * error (the task itself lives on in the database), and ends the pool if the store created it.
   * Tokens are not raised: closing a store is not cancelling its tasks.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.reaper.stop();
    this.watcher.close();
    this.changes.close();
    await this.listener?.close();
    await this.releasePool();
  }

  private table(name: keyof TaskDatabase) {
    return sql.table(`${this.schema}.${name}`);
  }

  /** Runs a database call, turning driver failures into `backend` errors without credentials. */
  private async run<T>(operation: () => Promise<T>): Promise<T> {
    this.assertOpen();
    try {
      return await operation();
    } catch (error) {
      throw toBackendError(error, this.connectionString);
    }
  }

  private assertOpen(): void {
    if (this.closed) throw new TaskStoreError('backend', 'the task store is closed');
  }

  /** Validates the id and answers whether it could name a task at all. */
  private isKnowable(taskId: string): boolean {
    return isIssuableTaskId(parse(taskIdSchema, taskId, 'taskId'));
  }

  private checkPayload(what: string, json: string): void {
    const bytes = payloadBytes(json);
    if (bytes > this.maxPayloadBytes) throw payloadTooLarge(what, bytes, this.maxPayloadBytes);
  }

  /** An oversized value is refused only for a task it could apply to; otherwise the call is a no-op. */
  private async checkPayloadOfOpenTask(taskId: string, what: string, json: string): Promise<void> {
    const bytes = payloadBytes(json);
    if (bytes <= this.maxPayloadBytes) return;
    const task = await this.getTask(taskId);
    if (task && !isTerminal(task.status)) throw payloadTooLarge(what, bytes, this.maxPayloadBytes);
  }

  /** Locks a live, non-terminal task row for the rest of the transaction; its status, or null. */
  private async lockOpenTask(trx: Transaction<TaskDatabase>, taskId: string): Promise<TaskStatus | null> {
    const row = await trx
      .selectFrom('tasks')
      .select('status')
      .where('task_id', '=', taskId)
      .where(isOpen)
      .where(isLive)
      .forUpdate()
      .executeTakeFirst();
    return row?.status ?? null;
  }

  /** The guarded single-statement terminal transition. */
  private async settle(outcome: Parameters<TaskStatements['settle']['execute']>[1]): Promise<boolean> {
    const { rows } = await this.run(() => this.statements.settle.execute(this.db, outcome));
    return rows[0]!.changed > 0;
  }

  /**
   * An oversized result or error still ends the task, as a content-free failure its waiters can
   * see; the rejected payload is not kept, and the caller learns why from the thrown error.
   */
  private async failForRetention(taskId: string, error: TaskStoreError): Promise<boolean> {
    const rows = await this.run(() =>
      this.db.transaction().execute(async (trx) => {
        const { rows } = await recordingTransition<Changed>(
          this.schema,
          sql`
            UPDATE ${this.table('tasks')}
               SET previous_status = status, status = 'failed', status_message = ${statusMessages.retentionFailed},
                   error = ${JSON.stringify(RETENTION_FAILURE_ERROR)}::jsonb,
                   arguments = 'null'::jsonb, meta = NULL, last_updated_at = now()
             WHERE task_id = ${taskId} AND ${isOpen} AND ${isLive}
            RETURNING ${TRANSITION_COLUMNS}`,
          COUNT_CHANGED,
        ).execute(trx);
        // Nothing of what the task was told is kept either.
        if (rows[0]!.changed > 0) await trx.deleteFrom('input_requests').where('task_id', '=', taskId).execute();
        return rows;
      }),
    );
    if (rows[0]!.changed === 0) return false;
    throw error;
  }

  /** Rows of one state of a task's input requests, sorted by key; null if the task is not live. */
  private async readInputRows(
    taskId: string,
    state: 'outstanding' | 'answered',
  ): Promise<{ key: string; value: Record<string, unknown> }[] | null> {
    if (!this.isKnowable(taskId)) return null;
    const { rows } = await this.run(() =>
      sql<{ key: string | null; value: Record<string, unknown> | null }>`
        SELECT r.request_key AS key, ${state === 'outstanding' ? sql`r.request` : sql`r.response`} AS value
          FROM ${this.table('tasks')} AS t
          LEFT JOIN ${this.table('input_requests')} AS r
            ON r.task_id = t.task_id AND r.state = ${state}
           AND ${state === 'outstanding' ? sql`t.status = 'input_required'` : sql`true`}
         WHERE t.task_id = ${taskId} AND ${isLive}`.execute(this.db),
    );
    if (rows.length === 0) return null;
    return rows
      .filter((row): row is { key: string; value: Record<string, unknown> } => row.key !== null)
      .sort((a, b) => compareKeys(a.key, b.key));
  }
}
