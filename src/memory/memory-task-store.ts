/**
 * The in-process reference {@link TaskStore}: a port of tower-mcp's `MemoryTaskStore`.
 */
import { z } from 'zod';
import { CancellationSource, type CancellationToken } from '../contract/cancellation.js';
import { TaskStoreError } from '../contract/errors.js';
import { generateTaskId } from '../contract/ids.js';
import { RETENTION_FAILURE_ERROR, statusMessages } from '../contract/messages.js';
import { payloadTooLarge } from '../contract/retention.js';
import {
  isTerminal,
  type AppliedInputResponses,
  type CallToolResult,
  type CreateTaskInput,
  type InputRequest,
  type InputRequests,
  type InputResponses,
  type JsonRpcError,
  type ListTasksOptions,
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
import {
  DEFAULT_PAGE_LIMIT,
  DEFAULT_TTL_MS,
  callToolResultSchema,
  createTaskInputSchema,
  inputRequestsSchema,
  inputResponsesSchema,
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
import { scheduleRepeating } from './deadline-timer.js';
import { EffectQueue } from './effect-queue.js';
import { cloneJson, jsonBytes, sameJson, sortedKeys } from '../contract/json.js';
import { comparePositions, decodeCursor, encodeCursor } from '../contract/list-cursor.js';
import {
  ownerQuotaExceeded,
  resolveLimits,
  retainedBytesExceeded,
  taskCountExceeded,
  type ResolvedLimits,
} from './retention-limits.js';
import {
  sumBytes,
  toInputRequests,
  toInputResponses,
  toSnapshot,
  toTaskObject,
  type LiveTask,
  type Sized,
} from './task-record.js';
import { TaskTable } from './task-table.js';
import { ChangeWatchers } from './change-watchers.js';
import type { TaskChangeFeed, TaskWatch } from '../contract/task-changes.js';
import { takeWaiters, waitForOutcome, wakeWaiters } from './waiters.js';

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
}

/** What one cleanup pass did; the same shape the PostgreSQL store's reaper reports. */
export interface ReapResult {
  /** Expired live tasks whose payload was dropped, leaving a tombstone. */
  tombstoned: number;
  /** Tombstones older than the retention window, removed for good. */
  purged: number;
}

export const DEFAULT_TOMBSTONE_RETENTION_MS = 60_000;

const optionsSchema = z
  .strictObject({
    defaultTtlMs: ttlSchema.optional(),
    limits: z
      .strictObject({
        maxTasks: z.number().optional(),
        maxPayloadBytes: z.number().optional(),
        maxRetainedBytes: z.number().optional(),
        maxTasksPerOwner: z.number().optional(),
      })
      .optional(),
    tombstoneRetentionMs: ttlSchema.optional(),
  })
  .optional();

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
export class MemoryTaskStore implements TaskStore, TaskChangeFeed {
  private readonly effects = new EffectQueue();
  private readonly watchers = new ChangeWatchers();
  private readonly table = new TaskTable(this.effects, (taskId) => this.watchers.changed(taskId));
  private readonly limits: ResolvedLimits;
  private readonly defaultTtlMs: number;
  private readonly tombstoneRetentionMs: number;
  private readonly stopCleanup: () => void;
  private closed = false;

  /**
   * Options are validated like every other argument: a bad TTL or limit throws `invalid_input`
   * here rather than surfacing later as an odd refusal.
   */
  constructor(options?: MemoryTaskStoreOptions) {
    const parsed = parse(optionsSchema, options, 'options');
    this.limits = resolveLimits(parsed?.limits);
    this.defaultTtlMs = parsed?.defaultTtlMs ?? DEFAULT_TTL_MS;
    this.tombstoneRetentionMs = parsed?.tombstoneRetentionMs ?? DEFAULT_TOMBSTONE_RETENTION_MS;
    // A retention of 0 means "purge at the next pass", not "pass continuously".
    const cleanupIntervalMs = this.tombstoneRetentionMs || DEFAULT_TOMBSTONE_RETENTION_MS;
    this.stopCleanup = scheduleRepeating(cleanupIntervalMs, () => {
      if (!this.closed) this.transaction(() => this.table.reap(this.tombstoneRetentionMs));
    });
  }

  /**
   * Creates a `working` task and returns the token its handler should watch.
   *
   * Limits are checked before anything is stored, in the reference's order: the arguments' size,
   * then the task count, then the owner's quota, then the aggregate bytes. Before refusing for
   * count or bytes the store first reclaims expired tasks, because memory held by tasks nobody can
   * see any more should never be the reason a new task is refused.
   */
  async createTask(input: CreateTaskInput): Promise<{ taskId: string; token: CancellationToken }> {
    return this.transaction(() => {
      const parsed = parse(createTaskInputSchema, input, 'input');
      const args = parsed.arguments === undefined ? null : cloneJson(parsed.arguments);
      const argumentsBytes = this.checkPayload('arguments', args);
      const owner = parsed.owner ?? null;
      this.admit(owner, argumentsBytes);

      let taskId = generateTaskId();
      while (this.table.has(taskId)) taskId = generateTaskId();
      const now = Date.now();
      const task: LiveTask = {
        kind: 'live',
        taskId,
        owner,
        toolName: parsed.toolName,
        arguments: { value: args, bytes: argumentsBytes },
        status: 'working',
        statusMessage: statusMessages.created,
        createdAtMs: now,
        lastUpdatedAtMs: now,
        ttlMs: parsed.ttlMs === undefined ? this.defaultTtlMs : parsed.ttlMs,
        pollIntervalMs: parsed.pollIntervalMs,
        meta: null,
        result: null,
        error: null,
        outstanding: new Map(),
        answeredKeys: new Set(),
        supersededKeys: new Set(),
        responses: new Map(),
        source: new CancellationSource(),
        expirySignalled: false,
        cancelTimer: null,
        waiters: new Set(),
      };
      this.table.insert(task);
      return { taskId, token: task.source.token };
    });
  }

  /** The owner of a task that is still visible; null for unknown or expired, like every read. */
  async taskOwner(taskId: string): Promise<{ owner: TaskOwner } | null> {
    return this.transaction(() => {
      const task = this.table.live(parse(taskIdSchema, taskId, 'taskId'));
      return task ? { owner: task.owner } : null;
    });
  }

  /**
   * Present, expired or missing, with the owner. Expired is reported while the store still holds
   * the record (an expired task not yet cleaned up, or its tombstone), so a router can tell the
   * task's owner "that task expired" instead of "no such task"; the owner comes with it because
   * the router must authorize before disclosing the difference. One lookup answers both, so expiry
   * cannot change between them.
   */
  async taskPresence(taskId: string): Promise<TaskPresence> {
    return this.transaction((): TaskPresence => {
      const entry = this.table.entry(parse(taskIdSchema, taskId, 'taskId'));
      if (entry === undefined) return { state: 'missing' };
      if (entry.kind === 'tombstone' || this.table.expireIfDue(entry, Date.now())) {
        return { state: 'expired', owner: entry.owner };
      }
      return { state: 'present', owner: entry.owner };
    });
  }

  async getTask(taskId: string): Promise<TaskObject | null> {
    return this.transaction(() => {
      const task = this.table.live(parse(taskIdSchema, taskId, 'taskId'));
      return task ? toTaskObject(task) : null;
    });
  }

  async getTaskResult(taskId: string): Promise<TaskSnapshot | null> {
    return this.transaction(() => {
      const task = this.table.live(parse(taskIdSchema, taskId, 'taskId'));
      return task ? toSnapshot(task) : null;
    });
  }

  /**
   * Resolves with the snapshot once the task is terminal (at once if it already is), or with null
   * if the task is unknown, expires, or is discarded while waiting. Rejects if the store closes.
   *
   * A raised token on a running task is not completion: cancellation is cooperative, and the
   * outcome exists only once something records it. An aborted `signal` rejects with its reason,
   * and an already-aborted one rejects before the task is even looked up.
   */
  async waitForCompletion(taskId: string, options?: { signal?: AbortSignal }): Promise<TaskSnapshot | null> {
    return this.transaction(() => {
      const id = parse(taskIdSchema, taskId, 'taskId');
      const signal = parse(waitOptionsSchema, options, 'options')?.signal;
      if (signal?.aborted) return Promise.reject(signal.reason);
      const task = this.table.live(id);
      if (!task) return null;
      if (isTerminal(task.status)) return toSnapshot(task);
      return waitForOutcome(task.waiters, signal);
    });
  }

  /**
   * One page of visible tasks, oldest first (creation time, then task id). The cursor is a
   * keyset position rather than an offset, so tasks created, finished or expiring between pages
   * never make a later page skip or repeat one. Expired tasks are never listed.
   */
  async listTasks(options?: ListTasksOptions): Promise<TaskPage> {
    return this.transaction(() => {
      const parsed = parse(listTasksOptionsSchema, options ?? {}, 'options');
      const after = parsed.cursor === undefined ? null : decodeCursor(parsed.cursor);
      const limit = parsed.limit ?? DEFAULT_PAGE_LIMIT;
      const matches = this.table
        .liveTasks()
        .filter(
          (task) =>
            (parsed.status === undefined || task.status === parsed.status) &&
            (parsed.owner === undefined || task.owner === parsed.owner) &&
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

  /**
   * Parks the task in `input_required` on `requests`, which replace the outstanding set.
   *
   * A request key names one question for the task's whole life (SEP-2663), which is what lets a
   * client deduplicate across polls. So a key that was answered, or dropped from an earlier set
   * (superseded), is spent and may not come back, and an outstanding key may be carried forward
   * only with the identical request. Reuse throws `invalid_transition` and changes nothing.
   */
  async requireInput(taskId: string, requests: InputRequests, message?: string | null): Promise<boolean> {
    return this.transaction(() => {
      const id = parse(taskIdSchema, taskId, 'taskId');
      const parsed = parse(inputRequestsSchema, requests, 'requests');
      const statusMessage = parse(messageSchema, message, 'message');
      const task = this.table.live(id);
      if (!task || isTerminal(task.status)) return false;

      const issued = new Map<string, Sized<InputRequest>>();
      for (const key of sortedKeys(Object.keys(parsed))) {
        const request = cloneJson(parsed[key]!) as InputRequest;
        issued.set(key, { value: request, bytes: this.checkPayload(`requests.${key}`, request) });
      }
      const reused = [...issued].filter(([key, request]) => {
        if (task.answeredKeys.has(key) || task.supersededKeys.has(key)) return true;
        const current = task.outstanding.get(key);
        return current !== undefined && !sameJson(current.value, request.value);
      });
      if (reused.length > 0) {
        const keys = reused.map(([key]) => key).join(', ');
        throw new TaskStoreError(
          'invalid_transition',
          `input request keys must be unique over a task's lifetime, but ${keys} already ${reused.length === 1 ? 'was' : 'were'} used by this task; use a new key to ask again`,
        );
      }
      this.reserveBytes(sumBytes(issued) - sumBytes(task.outstanding));

      for (const key of task.outstanding.keys()) {
        if (!issued.has(key)) task.supersededKeys.add(key);
      }
      this.table.update(task, () => {
        task.outstanding = issued;
        task.status = 'input_required';
        task.statusMessage = statusMessage ?? statusMessages.inputRequired;
        task.lastUpdatedAtMs = Date.now();
      });
      return true;
    });
  }

  /** `{}` when the task is not waiting on input (including terminal tasks); null when unknown or expired. */
  async outstandingInputRequests(taskId: string): Promise<InputRequests | null> {
    return this.transaction(() => {
      const task = this.table.live(parse(taskIdSchema, taskId, 'taskId'));
      if (!task) return null;
      return task.status === 'input_required' ? toInputRequests(task) : {};
    });
  }

  /**
   * Records the answers to outstanding requests and reports what happened to every key.
   *
   * Keys that are not outstanding (never issued, already answered, superseded) are ignored, not
   * rejected: to a client retrying a `tasks/update` they are indistinguishable, and failing the
   * whole update would fail a task over a duplicate delivery. Only accepted answers are measured
   * against the limits, so an oversized stray answer costs nothing. Answering the last outstanding
   * request returns the task to `working`.
   */
  async applyInputResponses(taskId: string, responses: InputResponses): Promise<AppliedInputResponses | null> {
    return this.transaction(() => {
      const id = parse(taskIdSchema, taskId, 'taskId');
      const parsed = parse(inputResponsesSchema, responses, 'responses');
      const task = this.table.live(id);
      if (!task || isTerminal(task.status)) return null;

      const waiting = task.status === 'input_required';
      const accepted = new Map<string, Sized<Record<string, unknown>>>();
      const ignored: string[] = [];
      for (const key of sortedKeys(Object.keys(parsed))) {
        if (!waiting || !task.outstanding.has(key)) {
          ignored.push(key);
          continue;
        }
        const response = cloneJson(parsed[key]!);
        accepted.set(key, { value: response, bytes: this.checkPayload(`responses.${key}`, response) });
      }
      let answeredBytes = 0;
      for (const key of accepted.keys()) answeredBytes += task.outstanding.get(key)!.bytes;
      this.reserveBytes(sumBytes(accepted) - answeredBytes);

      this.table.update(task, () => {
        for (const [key, response] of accepted) {
          task.outstanding.delete(key);
          task.answeredKeys.add(key);
          task.responses.set(key, response);
        }
        if (accepted.size > 0) task.lastUpdatedAtMs = Date.now();
        if (waiting && task.outstanding.size === 0) {
          task.status = 'working';
          task.statusMessage = statusMessages.resumed;
          task.lastUpdatedAtMs = Date.now();
        }
      });
      const stillOutstanding = waiting ? sortedKeys(task.outstanding.keys()) : [];
      return {
        accepted: [...accepted.keys()],
        ignored,
        stillOutstanding,
        complete: stillOutstanding.length === 0,
      };
    });
  }

  /** Every answer recorded so far, across all rounds; null when unknown or expired. */
  async inputResponses(taskId: string): Promise<InputResponses | null> {
    return this.transaction(() => {
      const task = this.table.live(parse(taskIdSchema, taskId, 'taskId'));
      return task ? toInputResponses(task) : null;
    });
  }

  /**
   * What a router needs to run the handler again after its questions were answered. The handler
   * restarts from the top, so it gets the original arguments and every answer so far, plus the same
   * token `createTask` returned, so expiry or cancellation stops the replayed run too.
   */
  async resumeContext(taskId: string): Promise<TaskResumeContext | null> {
    return this.transaction(() => {
      const task = this.table.live(parse(taskIdSchema, taskId, 'taskId'));
      if (!task) return null;
      return {
        toolName: task.toolName,
        arguments: cloneJson(task.arguments.value),
        inputResponses: toInputResponses(task),
        token: task.source.token,
      };
    });
  }

  /**
   * Progress reporting for a running task. A terminal status throws `invalid_transition` even for
   * an unknown id, because the call itself is wrong: terminal states are reached only through
   * `completeTask`, `failTask` and `cancelTask`, which record the outcome. Without a message the
   * current one is kept.
   */
  async setStatus(taskId: string, status: TaskStatus, message?: string | null): Promise<boolean> {
    return this.transaction(() => {
      const id = parse(taskIdSchema, taskId, 'taskId');
      const newStatus = parse(statusSchema, status, 'status');
      const newMessage = parse(messageSchema, message, 'message');
      if (isTerminal(newStatus)) {
        throw new TaskStoreError(
          'invalid_transition',
          `setStatus is for non-terminal progress; use completeTask, failTask or cancelTask to reach '${newStatus}'`,
        );
      }
      const task = this.table.live(id);
      if (!task || isTerminal(task.status)) return false;
      this.table.update(task, () => {
        task.status = newStatus;
        if (newMessage != null) task.statusMessage = newMessage;
        task.lastUpdatedAtMs = Date.now();
      });
      return true;
    });
  }

  /**
   * Changes the TTL, still measured from creation (SEP-2663 lets it change over a task's life).
   * Works on terminal tasks, whose retention is exactly what a TTL bounds. A TTL already in the
   * past expires the task at once: its token is raised and its waiters get null before this
   * returns. An expired task cannot be revived, so it answers false.
   */
  async setTtl(taskId: string, ttlMs: number): Promise<boolean> {
    return this.transaction(() => {
      const id = parse(taskIdSchema, taskId, 'taskId');
      const ttl = parse(ttlSchema, ttlMs, 'ttlMs');
      const task = this.table.live(id);
      if (!task) return false;
      task.ttlMs = ttl;
      task.lastUpdatedAtMs = Date.now();
      this.table.armExpiry(task);
      return true;
    });
  }

  /**
   * Replaces the task's `_meta`. It is protocol metadata rather than progress, so it works on
   * terminal tasks and does not touch `lastUpdatedAt`.
   */
  async setTaskMeta(taskId: string, meta: Record<string, unknown>): Promise<boolean> {
    return this.transaction(() => {
      const id = parse(taskIdSchema, taskId, 'taskId');
      const value = cloneJson(parse(metaSchema, meta, 'meta'));
      const task = this.table.live(id);
      if (!task) return false;
      const bytes = this.checkPayload('meta', value);
      this.reserveBytes(bytes - (task.meta?.bytes ?? 0));
      this.table.update(task, () => {
        task.meta = { value, bytes };
      });
      return true;
    });
  }

  /**
   * Records the tool's result. A result with `isError: true` completes the task too: the tool ran
   * and answered with a domain error, which SEP-2663 keeps apart from an execution failure.
   *
   * A result over the limits is not kept, but the task is not left running either: it ends
   * `failed` with the fixed, content-free {@link RETENTION_FAILURE_ERROR}, its waiters wake to see
   * that, and the call throws `retention_limit_exceeded`.
   */
  async completeTask(taskId: string, result: CallToolResult): Promise<boolean> {
    return this.transaction(() => {
      const id = parse(taskIdSchema, taskId, 'taskId');
      const value = cloneJson(parse(callToolResultSchema, result, 'result')) as CallToolResult;
      const task = this.table.live(id);
      if (!task || isTerminal(task.status)) return false;
      const bytes = this.acceptFinalPayload(task, 'result', value);
      this.finish(task, 'completed', statusMessages.completed, () => {
        task.result = { value, bytes };
      });
      return true;
    });
  }

  /**
   * Records that the call produced no result at all, keeping the JSON-RPC error whole (code,
   * message, data) because `tasks/get` on a failed task must return that object. An oversized
   * error, or a status message ("Task failed: " and the error's message) over `maxPayloadBytes`,
   * is handled like an oversized result.
   */
  async failTask(taskId: string, error: JsonRpcError): Promise<boolean> {
    return this.transaction(() => {
      const id = parse(taskIdSchema, taskId, 'taskId');
      const value = cloneJson(parse(jsonRpcErrorSchema, error, 'error')) as JsonRpcError;
      const task = this.table.live(id);
      if (!task || isTerminal(task.status)) return false;
      const bytes = this.acceptFinalPayload(task, 'error', value);
      // The status message repeats the error's message, so it is bounded like a payload too.
      const statusMessage = statusMessages.failed(value);
      const messageBytes = jsonBytes(statusMessage);
      if (messageBytes > this.limits.maxPayloadBytes) {
        this.failForRetention(task);
        throw payloadTooLarge('error message', messageBytes, this.limits.maxPayloadBytes);
      }
      this.finish(task, 'failed', statusMessage, () => {
        task.error = { value, bytes };
      });
      return true;
    });
  }

  /**
   * Raises the task's token and, if it is still running, records it as `cancelled`.
   *
   * The token is raised even for a finished task, so work still winding down behind it is told to
   * stop; the recorded outcome does not change, which is why the returned object may read
   * `completed`. Null for unknown or expired tasks (expiry has already raised the token).
   *
   * Limits never stop a cancellation: a reason whose status message would exceed
   * `maxPayloadBytes` is replaced by a fixed message rather than refused.
   */
  async cancelTask(taskId: string, reason?: string | null): Promise<TaskObject | null> {
    return this.transaction(() => {
      const id = parse(taskIdSchema, taskId, 'taskId');
      const why = parse(messageSchema, reason, 'reason');
      const task = this.table.live(id);
      if (!task) return null;
      this.effects.defer(() => task.source.cancel('cancelled'));
      this.table.changed(task.taskId);
      if (!isTerminal(task.status)) {
        // An oversized reason is not kept; the cancellation itself must still happen.
        const message = statusMessages.cancelled(why);
        const fits = why == null || jsonBytes(message) <= this.limits.maxPayloadBytes;
        this.finish(task, 'cancelled', fits ? message : statusMessages.cancelledOverLimit, () => {});
      }
      return toTaskObject(task);
    });
  }

  /**
   * Removes a task that should never have existed, typically one whose preparation failed, in any
   * state, including an expired task or its tombstone. Its token is not raised: there is no work to
   * stop. Anyone waiting on it gets null, since the task is now unknown.
   */
  async discardTask(taskId: string): Promise<boolean> {
    return this.transaction(() => {
      return this.table.remove(parse(taskIdSchema, taskId, 'taskId'));
    });
  }

  /**
   * Reports changes to the given tasks (see {@link TaskChangeFeed}): every transition, TTL change,
   * cancellation request, expiry and removal, each reported once it has happened.
   */
  async watchTasks(taskIds: readonly string[], onChange: (taskId: string) => void): Promise<TaskWatch> {
    return this.transaction(() => this.watchers.watch(parse(taskIdsSchema, taskIds, 'taskIds'), onChange));
  }

  /**
   * One cleanup pass, the same one the store runs every `tombstoneRetentionMs`: tombstones older
   * than the retention window are purged, then every expired live task becomes a tombstone that
   * keeps its owner and expiry time and drops its payload. Purging comes first so a tombstone made
   * by this pass always survives to be seen by `taskPresence`.
   *
   * Calling it is never needed for correctness (expired tasks are already invisible and their
   * tokens raised); it reclaims memory sooner, and gives tests a deterministic pass.
   */
  async reapExpired(): Promise<ReapResult> {
    return this.transaction(() => this.table.reap(this.tombstoneRetentionMs));
  }

  /**
   * Stops every timer and releases every task. Pending `waitForCompletion` calls reject with a
   * `backend` error: they must not hang, and resolving null would claim the task is gone; tokens
   * are not raised, because closing a store is not a decision to stop anyone's work. Afterwards every
   * operation throws `backend` ("the task store is closed"). Closing twice is harmless.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.stopCleanup();
    this.watchers.clear();
    wakeWaiters(this.table.clear(), new TaskStoreError('backend', 'the task store was closed while waiting for the task'));
  }

  // -- Internals ------------------------------------------------------------------------------

  /**
   * Runs one operation: all of its checks and changes synchronously, then the token raises and
   * waiter wake-ups it queued (see {@link EffectQueue}).
   */
  private transaction<T>(operation: () => T): T {
    if (this.closed) throw new TaskStoreError('backend', 'the task store is closed');
    return this.effects.run(operation);
  }

  /** Throws `retention_limit_exceeded` unless a new task with these arguments may be stored. */
  private admit(owner: TaskOwner, argumentsBytes: number): void {
    const { maxTasks, maxTasksPerOwner } = this.limits;
    if (this.table.size >= maxTasks) {
      this.table.purgeExpired();
      if (this.table.size >= maxTasks) throw taskCountExceeded(maxTasks);
    }
    if (maxTasksPerOwner !== null && this.table.countOwnedBy(owner) >= maxTasksPerOwner) {
      throw ownerQuotaExceeded(maxTasksPerOwner);
    }
    this.reserveBytes(argumentsBytes);
  }

  /** The payload's size, or `retention_limit_exceeded` when it is over `maxPayloadBytes`. */
  private checkPayload(what: string, value: unknown): number {
    const bytes = jsonBytes(value);
    if (bytes > this.limits.maxPayloadBytes) throw payloadTooLarge(what, bytes, this.limits.maxPayloadBytes);
    return bytes;
  }

  /** Whether `delta` more bytes fit under `maxRetainedBytes`, reclaiming expired payloads if needed. */
  private fits(delta: number): boolean {
    if (delta <= 0 || this.table.retainedBytes + delta <= this.limits.maxRetainedBytes) return true;
    this.table.reclaimExpiredPayloads();
    return this.table.retainedBytes + delta <= this.limits.maxRetainedBytes;
  }

  private reserveBytes(delta: number): void {
    if (!this.fits(delta)) throw retainedBytesExceeded(this.table.retainedBytes + delta, this.limits.maxRetainedBytes);
  }

  /**
   * Checks a result or error against both byte limits. When it does not fit, the task is ended with
   * the fixed failure (its waiters wake to it) and the limit error is thrown.
   */
  private acceptFinalPayload(task: LiveTask, what: 'result' | 'error', value: unknown): number {
    const bytes = jsonBytes(value);
    let refusal: TaskStoreError | null = null;
    if (bytes > this.limits.maxPayloadBytes) {
      refusal = payloadTooLarge(what, bytes, this.limits.maxPayloadBytes);
    } else {
      // Finishing drops the outstanding requests, so only the difference has to fit.
      const delta = bytes - sumBytes(task.outstanding);
      if (!this.fits(delta)) refusal = retainedBytesExceeded(this.table.retainedBytes + delta, this.limits.maxRetainedBytes);
    }
    if (refusal === null) return bytes;
    this.failForRetention(task);
    throw refusal;
  }

  /**
   * Ends a task whose outcome could not be kept, as tower-mcp does: `failed` with the fixed error,
   * and every payload it held dropped, so nothing of the rejected content (or anything else the task
   * carried) survives. The fixed error is the store's own constant, not a caller's payload, so it is
   * not charged; that keeps the failure possible however full the store is.
   */
  private failForRetention(task: LiveTask): void {
    this.finish(task, 'failed', statusMessages.retentionFailed, () => {
      task.arguments = { value: null, bytes: 0 };
      task.meta = null;
      task.result = null;
      task.error = { value: cloneJson(RETENTION_FAILURE_ERROR), bytes: 0 };
      task.answeredKeys.clear();
      task.supersededKeys.clear();
      task.responses.clear();
    });
  }

  /** Moves a task to a terminal status and wakes its waiters with the final snapshot. */
  private finish(task: LiveTask, status: TaskStatus, message: string, record: () => void): void {
    this.table.update(task, () => {
      record();
      task.outstanding = new Map();
      task.status = status;
      task.statusMessage = message;
      task.lastUpdatedAtMs = Date.now();
    });
    const waiters = takeWaiters(task.waiters);
    if (waiters.length > 0) {
      const snapshot = toSnapshot(task);
      this.effects.defer(() => wakeWaiters(waiters, snapshot));
    }
  }
}
