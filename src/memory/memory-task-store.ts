/**
 * The in-process reference {@link TaskStore}: a port of tower-mcp's `MemoryTaskStore`.
 */
import type { CancellationToken } from '../contract/cancellation.js';
import { closedWhileWaiting, storeClosed } from '../contract/errors.js';
import { generateTaskId } from '../contract/ids.js';
import { cloneJson } from '../contract/json.js';
import { comparePositions, encodeCursor } from '../contract/listing.js';
import { statusMessages } from '../contract/messages.js';
import { memoryStoreOptionsSchema, parseOptions } from '../contract/options.js';
import { scheduleRepeating } from '../contract/timers.js';
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
  type RetentionLimits,
  type TaskObject,
  type TaskOwner,
  type TaskPage,
  type TaskPresence,
  type TaskResumeContext,
  type TaskSnapshot,
  type TaskStatus,
  type TaskStore,
} from '../contract/types.js';
import { DEFAULT_TTL_MS, validate } from '../contract/validation.js';
import { leaseSettings, type LeasedTask, type LeaseOptions, type LeasingTaskStore } from '../contract/leases.js';
import { EffectQueue } from './effect-queue.js';
import { MemoryLeases } from './leases.js';
import { Retention } from './retention.js';
import { answerRequests, issueRequests } from './input-requests.js';
import { newTask, type LiveTask, toInputRequests, toInputResponses, toSnapshot, toTaskObject } from './task-record.js';
import { TaskTable } from './task-table.js';
import { ChangeWatchers } from './change-watchers.js';
import type { TaskChangeFeed, TaskWatch } from '../contract/task-changes.js';
import { wakeWaiters, waitForOutcome } from './waiters.js';

export interface MemoryTaskStoreOptions {
  /** TTL for tasks created without `ttlMs`, in milliseconds. (Default: 300000, five minutes.) */
  defaultTtlMs?: number;
  /**
   * (Default: 1024 tasks including tombstones, 4 MiB per payload, 64 MiB of payloads in all, no
   * per-owner quota.)
   */
  limits?: RetentionLimits;
  /**
   * How long an expired task's tombstone is kept, so `taskPresence` can still answer `expired`,
   * and also how often the automatic cleanup pass runs; 0 purges tombstones at the next pass, and
   * passes then run at the default interval. (Default: 60000.)
   */
  tombstoneRetentionMs?: number;
  /** Execution leases: heartbeat, lease length, rescue policies (src/contract/leases.ts). */
  leases?: LeaseOptions;
}

export const DEFAULT_TOMBSTONE_RETENTION_MS = 60_000;

/**
 * An in-process {@link TaskStore}: tasks live in a `Map` and die with the process.
 *
 * It is the reference the PostgreSQL store is held to, and the store to use for a single instance,
 * for tests, or for development. It is not shared across instances, so behind a load balancer a
 * `tasks/get` on another instance would find nothing; use the PostgreSQL store there.
 *
 * Expiry is exact without any traffic: each task has a timer at its deadline that raises its
 * cancellation token and wakes its waiters, and every read checks the deadline itself, so an expired
 * task reads as unknown the moment its TTL elapses even if the timer has not fired yet. Reclaiming
 * the memory is separate and periodic: a cleanup pass (every `tombstoneRetentionMs`, or
 * {@link reapExpired} by hand) turns expired tasks into payload-free tombstones and purges old
 * tombstones. Timers never keep the process alive; call {@link close} to stop them outright.
 *
 * Every operation is atomic: the store does all of its checking and mutation synchronously, and only
 * afterwards raises tokens and wakes waiters, so code reacting to a token never sees (or interleaves
 * with) a half-applied change.
 *
 * @example
 * ```ts
 * const store = new MemoryTaskStore({ limits: { maxTasksPerOwner: 50 } });
 * const { taskId, token } = await store.createTask({ toolName: 'build_report', owner: 'alice' });
 *
 * // The handler works in the background, checking the token between steps.
 * void (async () => {
 *   const rows = await buildReport({ signal: token.signal });
 *   await store.completeTask(taskId, { content: [{ type: 'text', text: `${rows} rows` }] });
 * })();
 *
 * const snapshot = await store.waitForCompletion(taskId); // null if it expired first
 * await store.close();
 * ```
 */
export class MemoryTaskStore implements LeasingTaskStore, TaskChangeFeed {
  private readonly effects = new EffectQueue();
  private readonly watchers = new ChangeWatchers();
  private readonly table = new TaskTable(this.effects, (taskId) => this.watchers.changed(taskId));
  private readonly retention: Retention;
  private readonly defaultTtlMs: number;
  private readonly tombstoneRetentionMs: number;
  private readonly stopCleanup: () => void;
  private closed = false;
  /** Execution leases: one process is one runner (see ./leases.ts). */
  readonly leases: MemoryLeases;

  /**
   * Options are validated like every other argument: a bad TTL or limit throws `invalid_input`
   * here rather than surfacing later as an odd refusal.
   */
  constructor(options?: MemoryTaskStoreOptions) {
    const parsed = parseOptions(memoryStoreOptionsSchema, options);
    this.retention = new Retention(this.table, parsed?.limits);
    this.defaultTtlMs = parsed?.defaultTtlMs ?? DEFAULT_TTL_MS;
    this.tombstoneRetentionMs = parsed?.tombstoneRetentionMs ?? DEFAULT_TOMBSTONE_RETENTION_MS;
    // A retention of 0 means "purge at the next pass", not "pass continuously".
    const cleanupIntervalMs = this.tombstoneRetentionMs || DEFAULT_TOMBSTONE_RETENTION_MS;
    this.stopCleanup = scheduleRepeating(cleanupIntervalMs, () => {
      if (!this.closed) this.run(() => this.table.reap(this.tombstoneRetentionMs));
    });
    const host = { store: this, table: this.table, run: <T>(operation: () => T) => this.run(operation) };
    const fail = (task: LiveTask, error: JsonRpcError) => this.failWith(task, error);
    this.leases = new MemoryLeases({ ...host, createLeased: async (input) => this.create(input, true), fail }, leaseSettings(parsed?.leases));
  }

  /** Limits are checked first: the arguments' size, then {@link Retention.admit}. */
  async createTask(input: CreateTaskInput): Promise<{ taskId: string; token: CancellationToken }> {
    const { taskId, token } = this.create(input, false);
    return { taskId, token };
  }

  private create(input: CreateTaskInput, leased: boolean): LeasedTask {
    return this.run(() => {
      const parsed = validate.createTask(input);
      const args = this.retention.payload('arguments', parsed.arguments ?? null);
      const owner = parsed.owner ?? null;
      this.retention.admit(owner, args.bytes);

      let taskId = generateTaskId();
      while (this.table.has(taskId)) taskId = generateTaskId();
      const task = newTask({
        taskId,
        owner,
        toolName: parsed.toolName,
        arguments: args,
        ttlMs: parsed.ttlMs === undefined ? this.defaultTtlMs : parsed.ttlMs,
        pollIntervalMs: parsed.pollIntervalMs,
      });
      if (leased) this.leases.lease(task);
      this.table.insert(task);
      return { taskId, token: task.source.token, task: toTaskObject(task) };
    });
  }

  async taskOwner(taskId: string): Promise<{ owner: TaskOwner } | null> {
    return this.run(() => {
      const task = this.table.live(validate.taskId(taskId));
      return task ? { owner: task.owner } : null;
    });
  }

  async taskPresence(taskId: string): Promise<TaskPresence> {
    return this.run((): TaskPresence => {
      const entry = this.table.entry(validate.taskId(taskId));
      if (entry === undefined) return { state: 'missing' };
      if (entry.kind === 'tombstone' || this.table.expireIfDue(entry, Date.now())) {
        return { state: 'expired', owner: entry.owner };
      }
      return { state: 'present', owner: entry.owner };
    });
  }

  async getTask(taskId: string): Promise<TaskObject | null> {
    return this.run(() => {
      const task = this.table.live(validate.taskId(taskId));
      return task ? toTaskObject(task) : null;
    });
  }

  async getTaskResult(taskId: string): Promise<TaskSnapshot | null> {
    return this.run(() => {
      const task = this.table.live(validate.taskId(taskId));
      return task ? toSnapshot(task) : null;
    });
  }

  async waitForCompletion(taskId: string, options?: { signal?: AbortSignal }): Promise<TaskSnapshot | null> {
    return this.run(() => {
      const { taskId: id, signal } = validate.waitForCompletion(taskId, options);
      if (signal?.aborted) return Promise.reject(signal.reason);
      const task = this.table.live(id);
      if (!task) return null;
      if (isTerminal(task.status)) return toSnapshot(task);
      return waitForOutcome(task.waiters, signal);
    });
  }

  async listTasks(options?: ListTasksOptions): Promise<TaskPage> {
    return this.run(() => {
      const { status, owner, after, limit } = validate.listTasks(options);
      const matches = this.table
        .liveTasks()
        .filter(
          (task) =>
            (status === undefined || task.status === status) &&
            (owner === undefined || task.owner === owner) &&
            (after === null || comparePositions(task, after) > 0),
        )
        .sort(comparePositions);
      const page = matches.slice(0, limit);
      const last = page.at(-1);
      return {
        tasks: page.map(toTaskObject),
        nextCursor: matches.length > limit && last ? encodeCursor(last) : null,
      };
    });
  }

  async requireInput(taskId: string, requests: InputRequests, message?: string | null): Promise<boolean> {
    return this.run(() => {
      const parsed = validate.requireInput(taskId, requests, message);
      const task = this.table.live(parsed.taskId);
      if (!task || isTerminal(task.status) || !this.leases.allows(task)) return false;

      issueRequests(task, parsed.requests, parsed.message, this.retention, this.table);
      return true;
    });
  }

  async outstandingInputRequests(taskId: string): Promise<InputRequests | null> {
    return this.run(() => {
      const task = this.table.live(validate.taskId(taskId));
      if (!task) return null;
      return task.status === 'input_required' ? toInputRequests(task) : {};
    });
  }

  async applyInputResponses(taskId: string, responses: InputResponses): Promise<AppliedInputResponses | null> {
    return this.run(() => {
      const parsed = validate.applyInputResponses(taskId, responses);
      const task = this.table.live(parsed.taskId);
      if (!task || isTerminal(task.status)) return null;

      return answerRequests(task, parsed.responses, this.retention, this.table);
    });
  }

  async inputResponses(taskId: string): Promise<InputResponses | null> {
    return this.run(() => {
      const task = this.table.live(validate.taskId(taskId));
      return task ? toInputResponses(task) : null;
    });
  }

  /** The token is the very one `createTask` returned. */
  async resumeContext(taskId: string): Promise<TaskResumeContext | null> {
    return this.run(() => {
      const task = this.table.live(validate.taskId(taskId));
      if (!task) return null;
      return {
        toolName: task.toolName,
        arguments: cloneJson(task.arguments.value),
        inputResponses: toInputResponses(task),
        token: task.source.token,
      };
    });
  }

  async setStatus(taskId: string, status: TaskStatus, message?: string | null): Promise<boolean> {
    return this.run(() => {
      const parsed = validate.setStatus(taskId, status, message);
      const task = this.table.live(parsed.taskId);
      if (!task || isTerminal(task.status) || !this.leases.allows(task)) return false;
      this.retention.checkMessage(parsed.message);
      this.table.update(task, () => {
        task.status = parsed.status;
        if (parsed.message !== null) task.statusMessage = parsed.message;
        task.lastUpdatedAtMs = Date.now();
      });
      return true;
    });
  }

  /** A TTL in the past raises the token and wakes waiters with null before this returns. */
  async setTtl(taskId: string, ttlMs: number): Promise<boolean> {
    return this.run(() => {
      const parsed = validate.setTtl(taskId, ttlMs);
      const task = this.table.live(parsed.taskId);
      if (!task) return false;
      task.ttlMs = parsed.ttlMs;
      task.lastUpdatedAtMs = Date.now();
      this.table.armExpiry(task);
      return true;
    });
  }

  async setTaskMeta(taskId: string, meta: Record<string, unknown>): Promise<boolean> {
    return this.run(() => {
      const parsed = validate.setTaskMeta(taskId, meta);
      const task = this.table.live(parsed.taskId);
      if (!task) return false;
      const value = this.retention.payload('meta', parsed.meta);
      this.retention.reserve(value.bytes - (task.meta?.bytes ?? 0));
      this.table.update(task, () => {
        task.meta = value;
      });
      return true;
    });
  }

  async completeTask(taskId: string, result: CallToolResult): Promise<boolean> {
    return this.run(() => {
      const parsed = validate.completeTask(taskId, result);
      const task = this.table.live(parsed.taskId);
      if (!task || isTerminal(task.status) || !this.leases.allows(task)) return false;
      const kept = this.retention.outcome(task, 'result', parsed.result);
      this.table.finish(task, 'completed', statusMessages.completed, () => {
        task.result = kept;
      });
      return true;
    });
  }

  async failTask(taskId: string, error: JsonRpcError): Promise<boolean> {
    return this.run(() => {
      const parsed = validate.failTask(taskId, error);
      const task = this.table.live(parsed.taskId);
      if (!task || isTerminal(task.status) || !this.leases.allows(task)) return false;
      this.failWith(task, parsed.error);
      return true;
    });
  }

  async cancelTask(taskId: string, reason?: string | null): Promise<TaskObject | null> {
    return this.run(() => {
      const parsed = validate.cancelTask(taskId, reason);
      const task = this.table.live(parsed.taskId);
      if (!task) return null;
      this.effects.defer(() => task.source.cancel('cancelled'));
      this.table.changed(task.taskId);
      if (!isTerminal(task.status)) {
        this.table.finish(task, 'cancelled', statusMessages.cancelled(parsed.reason, this.retention.maxPayloadBytes));
      }
      return toTaskObject(task);
    });
  }

  async discardTask(taskId: string): Promise<boolean> {
    return this.run(() => this.table.remove(validate.taskId(taskId)));
  }

  /**
   * Reports changes to the given tasks (see {@link TaskChangeFeed}): every transition, TTL change,
   * cancellation request, expiry and removal, each reported once it has happened.
   */
  async watchTasks(taskIds: readonly string[], onChange: (taskId: string) => void): Promise<TaskWatch> {
    return this.run(() => this.watchers.watch(validate.taskIds(taskIds), onChange));
  }

  /**
   * One cleanup pass, the one the store runs every `tombstoneRetentionMs`: tombstones older than
   * the retention window are purged, then every expired live task becomes a tombstone. Never
   * needed for correctness (expired tasks are already invisible and their tokens raised); it
   * reclaims memory sooner, and gives tests a deterministic pass.
   */
  async reapExpired(): Promise<ReapResult> {
    return this.run(() => this.table.reap(this.tombstoneRetentionMs));
  }

  /** Stops every timer and releases every task. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.stopCleanup();
    void this.leases.close();
    this.watchers.clear();
    wakeWaiters(this.table.clear(), closedWhileWaiting());
  }

  private failWith(task: LiveTask, error: JsonRpcError): void {
    const kept = this.retention.outcome(task, 'error', error);
    this.table.finish(task, 'failed', statusMessages.failed(error), () => {
      task.error = kept;
    });
  }

  /**
   * Runs one operation, refused on a closed store whatever its arguments: all of its checks and
   * changes synchronously, then the token raises and waiter wake-ups it queued (see
   * {@link EffectQueue}).
   */
  private run<T>(operation: () => T): T {
    if (this.closed) throw storeClosed();
    return this.effects.run(operation);
  }
}
