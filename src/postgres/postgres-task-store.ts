/**
 * The TaskStore on PostgreSQL: tasks survive restarts, are visible to every instance, and can be
 * read with plain SQL (see migrations/ for the schema).
 *
 * Each method validates its arguments through the contract, runs one statement (task-statements.ts;
 * the input-request protocol, which spans rows, runs a transaction in input-requests.ts), and maps
 * the row; store-calls.ts says how every call runs (the closed check, the per-task turn for writes,
 * errors). Every transition holds the task row's lock, and expiry is decided by the database clock
 * inside the statement, so instances with skewed clocks agree.
 */
import { Kysely, PostgresDialect } from 'kysely';
import type pg from 'pg';
import type { CancellationToken } from '../contract/cancellation.js';
import { storeClosed, TaskStoreError } from '../contract/errors.js';
import { statusMessages } from '../contract/messages.js';
import { encodePayload, type EncodedPayload } from '../contract/retention.js';
import {
  isTerminal,
  type AppliedInputResponses,
  type CallToolResult,
  type CreateTaskInput,
  type InputRequests,
  type InputResponses,
  type JsonRpcError,
  type ListTasksOptions,
  type ReapResult,
  type TaskObject,
  type TaskPage,
  type TaskPresence,
  type TaskResumeContext,
  type TaskSnapshot,
  type TaskStatus,
} from '../contract/types.js';
import { isIssuableTaskId, validate } from '../contract/validation.js';
import { compareKeys } from '../contract/json.js';
import { InputRequestProtocol } from './input-requests.js';
import { listenerFor, type NotificationListener, type ListenerState, type ListenerStateChange } from './listener.js';
import { storeSettings, type PostgresTaskStoreOptions } from './options.js';
import { createPool, guardPool, storeConnections } from './pool.js';
import { runCompiledDirectly } from './compiled-query.js';
import { PostgresLeases, type LeaseHost } from './leases.js';
import type { LeasingTaskStore } from '../contract/leases.js';
import { Reaper, type ReaperPass } from './reaper.js';
import { RetentionEnforcer } from './retention.js';
import { StoreCalls } from './store-calls.js';
import { discardWithDependents } from './task-dependents.js';
import { TaskGate } from './task-gate.js';
import { StoreTelemetry } from './telemetry.js';
import { notificationChannel } from './schema-name.js';
import { storeDatabase, type StoreDatabase, type TaskDatabase } from './tables.js';
import { toSnapshot, toTaskObject } from './task-rows.js';
import { listPage, taskStatements, type TaskStatements } from './task-statements.js';
import { TaskCreation } from './task-creation.js';
import { TaskWatcher } from './task-watcher.js';
import { PostgresTaskChanges } from './task-changes.js';
import type { TaskChangeFeed, TaskWatch } from '../contract/task-changes.js';

export class PostgresTaskStore implements LeasingTaskStore, TaskChangeFeed {
  readonly schema: string;
  /** Execution leases: see {@link TaskLeases} and the README's "When a runner dies". */
  readonly leases: PostgresLeases;
  private readonly database: StoreDatabase;
  private readonly pool: pg.Pool;
  /** Ends the pool if the store created it; otherwise stops listening on the caller's pool. */
  private readonly releasePool: () => Promise<void>;
  private readonly maxPayloadBytes: number;
  private readonly statements: TaskStatements;
  private readonly inputRequests: InputRequestProtocol;
  private readonly retention: RetentionEnforcer;
  private readonly creation: TaskCreation;
  private readonly calls: StoreCalls;
  private readonly listener: NotificationListener | null;
  private readonly watcher: TaskWatcher;
  private readonly changes: PostgresTaskChanges;
  private readonly reaper: Reaper;
  private readonly telemetry: StoreTelemetry;
  private closed = false;

  constructor(options: PostgresTaskStoreOptions) {
    const settings = storeSettings(options);
    this.schema = settings.schema;
    this.maxPayloadBytes = settings.maxPayloadBytes;

    this.pool = settings.pool ?? createPool(settings.connectionString, 10);
    const stopGuarding = settings.pool ? guardPool(settings.pool) : null;
    this.releasePool = stopGuarding ? async () => stopGuarding() : () => this.pool.end();
    const connections = storeConnections(this.pool, { preparedStatements: settings.preparedStatements });
    this.database = storeDatabase(new Kysely<TaskDatabase>({ dialect: new PostgresDialect({ pool: connections.dialect }) }), this.schema);
    runCompiledDirectly(this.database.db, connections.direct);

    this.telemetry = new StoreTelemetry(settings);
    this.statements = taskStatements(this.database);
    const gate = new TaskGate(settings.lockTimeoutMs);
    this.calls = new StoreCalls(this.database, gate, settings.connectionString, () => this.closed, (failure) =>
      this.telemetry.backendFailed(failure),
    );
    this.inputRequests = new InputRequestProtocol(this.database, this.statements, this.maxPayloadBytes, (id, status) =>
      this.transitioned(id, status),
    );
    this.retention = new RetentionEnforcer(this.database, settings.maxTasksPerOwner);
    this.listener = listenerFor(settings.listen, this.pool, notificationChannel(this.schema));
    const watching = { db: this.database.db, statements: this.statements, listener: this.listener, gate, backstopPollMs: settings.backstopPollMs };
    this.watcher = new TaskWatcher({ ...watching, failure: (error) => this.calls.failure(error) });
    this.changes = new PostgresTaskChanges(watching);
    this.reaper = new Reaper(this.database, settings.reaper);
    this.reaper.onPass((outcome, durationMs) => this.telemetry.reaperPassed(outcome, durationMs));
    const leaseHost = { store: this, database: this.database, calls: this.calls, telemetry: this.telemetry };
    const rescueFailed = (taskIds: string[]) => taskIds.forEach((id) => this.transitioned(id, 'failed'));
    this.creation = new TaskCreation({
      calls: this.calls,
      statements: this.statements,
      retention: this.retention,
      watcher: this.watcher,
      telemetry: this.telemetry,
      defaultTtlMs: settings.defaultTtlMs,
      maxPayloadBytes: this.maxPayloadBytes,
    });
    const createLeased: LeaseHost['createLeased'] = (input, runner) => this.creation.createLeased(input, runner);
    this.leases = new PostgresLeases({ ...leaseHost, createLeased, rescueFailed }, settings.leases, settings.reaper !== false);
    this.listener?.onStateChange((change) => this.telemetry.listenerChanged(change));
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
   * Observes reaper passes, automatic or by hand: their counts (with `historyPurged`, which the
   * contract's {@link ReapResult} has no room for), or the error that ended one. Returns a
   * function that unsubscribes.
   */
  onReaperPass(callback: (outcome: ReaperPass | TaskStoreError) => void): () => void {
    return this.reaper.onPass((outcome) => callback(outcome instanceof Error ? this.calls.backendError(outcome) : outcome));
  }

  /**
   * One reaper pass: expired rows become tombstones, old tombstones are purged, and so is the
   * history of tasks long gone. Returns the contract's counts; {@link onReaperPass} sees all three.
   */
  async reapExpired(): Promise<ReapResult> {
    const { tombstoned, purged } = await this.calls.run(() => this.reaper.runOnce());
    return { tombstoned, purged };
  }

  async createTask(input: CreateTaskInput): Promise<{ taskId: string; token: CancellationToken }> {
    return this.creation.create(input);
  }

  async taskOwner(taskId: string): Promise<{ owner: string | null } | null> {
    return this.calls.onTask(() => validate.taskId(taskId), null, async (id) => {
      const { rows } = await this.statements.owner.execute(this.database.db, { taskId: id });
      return rows[0] ? { owner: rows[0].owner } : null;
    });
  }

  async taskPresence(taskId: string): Promise<TaskPresence> {
    return this.calls.onTask(() => validate.taskId(taskId), { state: 'missing' }, async (id): Promise<TaskPresence> => {
      const row = (await this.statements.presence.execute(this.database.db, { taskId: id })).rows[0];
      if (!row) return { state: 'missing' };
      return { state: row.live ? 'present' : 'expired', owner: row.owner };
    });
  }

  async getTask(taskId: string): Promise<TaskObject | null> {
    return this.calls.onTask(() => validate.taskId(taskId), null, async (id) => {
      const { rows } = await this.statements.taskObject.execute(this.database.db, { taskId: id });
      return rows[0] ? toTaskObject(rows[0]) : null;
    });
  }

  async getTaskResult(taskId: string): Promise<TaskSnapshot | null> {
    return this.calls.onTask(() => validate.taskId(taskId), null, async (id) => {
      const { rows } = await this.statements.snapshot.execute(this.database.db, { taskId: id });
      return rows[0] ? toSnapshot(rows[0]) : null;
    });
  }

  /**
   * Wakes on a NOTIFY from whichever instance settles the task, with a slow poll while the
   * listener is down.
   */
  async waitForCompletion(taskId: string, options?: { signal?: AbortSignal }): Promise<TaskSnapshot | null> {
    if (this.closed) throw storeClosed();
    const { taskId: id, signal } = validate.waitForCompletion(taskId, options);
    if (signal?.aborted) throw signal.reason;
    if (!isIssuableTaskId(id)) return null;
    return this.telemetry.timeWait(this.watcher.waitForCompletion(id, signal), signal);
  }

  /**
   * Reports changes to the given tasks made on any instance (see {@link TaskChangeFeed}), as the
   * NOTIFY trigger announces them; resolves once the tasks are flagged for announcement.
   */
  async watchTasks(taskIds: readonly string[], onChange: (taskId: string) => void): Promise<TaskWatch> {
    return this.calls.run(() => this.changes.watch(validate.taskIds(taskIds).filter(isIssuableTaskId), onChange));
  }

  async listTasks(options?: ListTasksOptions): Promise<TaskPage> {
    return this.calls.run(() => listPage(this.database, validate.listTasks(options)));
  }

  async requireInput(taskId: string, requests: InputRequests, message?: string | null): Promise<boolean> {
    return this.calls.onTaskWrite(
      () => validate.requireInput(taskId, requests, message),
      false,
      (parsed, lockTimeout) =>
        this.inputRequests.require(parsed.taskId, parsed.requests, parsed.message, lockTimeout, this.leases.runnerId),
    );
  }

  async outstandingInputRequests(taskId: string): Promise<InputRequests | null> {
    return this.calls.onTask(() => validate.taskId(taskId), null, (id) => this.inputRequests.outstanding(id));
  }

  async applyInputResponses(taskId: string, responses: InputResponses): Promise<AppliedInputResponses | null> {
    return this.calls.onTaskWrite(
      () => validate.applyInputResponses(taskId, responses),
      null,
      (parsed, lockTimeout) => this.inputRequests.apply(parsed.taskId, parsed.responses, lockTimeout),
    );
  }

  async inputResponses(taskId: string): Promise<InputResponses | null> {
    return this.calls.onTask(() => validate.taskId(taskId), null, (id) => this.inputRequests.answered(id));
  }

  /**
   * The token is the one `createTask` returned when that was on this instance; elsewhere it is a
   * token this instance raises on the same signals (cancellation by any instance, the deadline).
   */
  async resumeContext(taskId: string): Promise<TaskResumeContext | null> {
    return this.calls.onTask(() => validate.taskId(taskId), null, async (id) => {
      const row = (await this.statements.resumeContext.execute(this.database.db, { taskId: id })).rows[0];
      if (!row) return null;
      const answers = (row.answers ?? []).sort(([a], [b]) => compareKeys(a, b));
      return {
        toolName: row.tool_name,
        arguments: row.arguments,
        inputResponses: Object.fromEntries(answers) as InputResponses,
        token: this.watcher.tokenFor(id, { cancelRequested: row.cancel_requested, msUntilExpiry: row.ms_until_expiry }),
      };
    });
  }

  async setStatus(taskId: string, status: TaskStatus, message?: string | null): Promise<boolean> {
    return this.calls.onTaskWrite(() => validate.setStatus(taskId, status, message), false, async (parsed, lockTimeout) => {
      const message = parsed.message === null ? null : encodePayload('message', parsed.message, this.maxPayloadBytes);
      // Refused only for a task the call applies to; for any other it is a no-op, as ever.
      if (message instanceof TaskStoreError) {
        return this.refuseIf(message, async () => {
          const task = await this.getTask(parsed.taskId);
          return task !== null && !isTerminal(task.status);
        });
      }
      const { rows } = await this.statements.setStatus.execute(this.database.db, { ...parsed, lockTimeout, runnerId: this.leases.runnerId });
      if (rows[0]!.transitioned > 0) this.transitioned(parsed.taskId, parsed.status);
      return rows[0]!.changed > 0;
    });
  }

  /** A deadline in the past raises the task's token wherever that token is held. */
  async setTtl(taskId: string, ttlMs: number): Promise<boolean> {
    return this.calls.onTaskWrite(() => validate.setTtl(taskId, ttlMs), false, async (parsed, lockTimeout) => {
      const row = (await this.statements.setTtl.execute(this.database.db, { ...parsed, lockTimeout })).rows[0];
      if (!row) return false;
      this.watcher.deadlineMoved(parsed.taskId, row.ms_until_expiry);
      this.changes.changedHere(parsed.taskId, { deadlineMoved: true });
      return true;
    });
  }

  async setTaskMeta(taskId: string, meta: Record<string, unknown>): Promise<boolean> {
    return this.calls.onTaskWrite(() => validate.setTaskMeta(taskId, meta), false, async ({ taskId: id, meta: value }, lockTimeout) => {
      const encoded = encodePayload('meta', value, this.maxPayloadBytes);
      if (encoded instanceof TaskStoreError) return this.refuseIf(encoded, async () => (await this.getTask(id)) !== null);
      const result = await this.statements.setMeta.execute(this.database.db, { taskId: id, metaJson: encoded.json, lockTimeout });
      return (result.numAffectedRows ?? 0n) > 0n;
    });
  }

  async completeTask(taskId: string, result: CallToolResult): Promise<boolean> {
    return this.calls.onTaskWrite(() => validate.completeTask(taskId, result), false, (parsed, lockTimeout) => {
      const result = encodePayload('result', parsed.result, this.maxPayloadBytes);
      return this.settle(parsed.taskId, lockTimeout, result, (json) => ({ status: 'completed', message: statusMessages.completed, result: json, error: null }));
    });
  }

  async failTask(taskId: string, error: JsonRpcError): Promise<boolean> {
    return this.calls.onTaskWrite(() => validate.failTask(taskId, error), false, (parsed, lockTimeout) => {
      const error = encodePayload('error', parsed.error, this.maxPayloadBytes);
      const message = statusMessages.failed(parsed.error);
      return this.settle(parsed.taskId, lockTimeout, error, (json) => ({ status: 'failed', message, result: null, error: json }));
    });
  }

  /** Raises the task's token wherever it is held, on this instance at once. */
  async cancelTask(taskId: string, reason?: string | null): Promise<TaskObject | null> {
    return this.calls.onTaskWrite(() => validate.cancelTask(taskId, reason), null, async (parsed, lockTimeout) => {
      const message = statusMessages.cancelled(parsed.reason, this.maxPayloadBytes);
      const row = (await this.statements.cancel.execute(this.database.db, { taskId: parsed.taskId, message, lockTimeout })).rows[0];
      if (!row) return null;
      if (row.transitioned) this.transitioned(parsed.taskId, 'cancelled');
      // A cancel request on a finished task is news to the task's watches all the same.
      else this.changes.changedHere(parsed.taskId);
      this.watcher.cancelled(parsed.taskId);
      return toTaskObject(row);
    });
  }

  async discardTask(taskId: string): Promise<boolean> {
    return this.calls.onTaskWrite(() => validate.taskId(taskId), false, async (id, lockTimeout) => {
      const removed = await discardWithDependents(this.database, this.statements, id, lockTimeout);
      this.leases.ended(id);
      this.watcher.discarded(id);
      if (removed) this.changes.changedHere(id);
      return removed;
    });
  }

  /**
   * Stops the reaper and the listener, rejects pending `waitForCompletion` calls (the task itself
   * lives on in the database), and ends the pool if the store created it.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all([this.reaper.stop(), this.leases.close()]);
    this.watcher.close();
    this.changes.close();
    await this.listener?.close();
    await this.releasePool();
  }

  /** Throws `refusal` if the call would have applied to the task; otherwise the call is a no-op. */
  private async refuseIf(refusal: TaskStoreError, applies: () => Promise<boolean>): Promise<false> {
    if (await applies()) throw refusal;
    return false;
  }

  /**
   * The terminal transition of completeTask and failTask. An outcome over the limits still ends
   * the task, as a content-free failure its waiters can see, and the caller learns why.
   */
  private async settle(
    taskId: string,
    lockTimeout: string,
    payload: EncodedPayload | TaskStoreError,
    outcome: (json: string) => { status: 'completed' | 'failed'; message: string; result: string | null; error: string | null },
  ): Promise<boolean> {
    const runnerId = this.leases.runnerId;
    if (payload instanceof TaskStoreError) {
      if (!(await this.retention.failForRetention(taskId, lockTimeout, runnerId))) return false;
      this.transitioned(taskId, 'failed');
      throw payload;
    }
    const settled = outcome(payload.json);
    const { rows } = await this.statements.settle.execute(this.database.db, { taskId, lockTimeout, runnerId, ...settled });
    if (rows[0]!.changed === 0) return false;
    this.transitioned(taskId, settled.status);
    return true;
  }

  /**
   * A status change this instance committed: counted, and told to this instance's waiters and
   * watches, which hear it at once even where no NOTIFY reaches them (poll-only mode).
   */
  private transitioned(taskId: string, status: TaskStatus): void {
    if (isTerminal(status)) this.leases.ended(taskId);
    this.telemetry.transitioned(status);
    this.watcher.changedHere(taskId);
    this.changes.changedHere(taskId);
  }
}
