/**
 * Any contract `TaskStore` as the `TaskStore` of `@modelcontextprotocol/sdk` 1.x (protocol
 * 2025-11-25): what its `McpServer` / `Server` take as `taskStore`, serving tasks/get, tasks/result,
 * tasks/list and tasks/cancel, and what tools create their tasks through.
 *
 * Ownership follows the contract: a task belongs to the principal of the request that created it
 * (from the request's auth info, see `principal`), or to nobody without authentication. Get, result
 * and cancel by id work from any session and any instance for a matching principal (the 128-bit id
 * is the bearer); a foreign task reads exactly like a missing one. `tasks/list` never enumerates
 * another client's tasks: an authenticated caller lists its principal's, an unauthenticated one
 * only those created in its own session.
 */
import type {
  CreateTaskOptions,
  TaskStore as SdkTaskStoreContract,
} from '@modelcontextprotocol/sdk/experimental/tasks/interfaces.js';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import { ErrorCode, McpError, type Request, type RequestId, type Result, type Task } from '@modelcontextprotocol/sdk/types.js';
import type { CancellationToken } from '../contract/cancellation.js';
import {
  isTerminal,
  ownerMatches,
  type CallToolResult,
  type TaskObject,
  type TaskOwner,
  type TaskSnapshot,
  type TaskStatus,
  type TaskStore,
} from '../contract/types.js';
import {
  invalidCursor,
  isInvalidInput,
  noResultStored,
  resultAlreadyStored,
  taskNotFound,
  terminalStatus,
  toMcpError,
} from './errors.js';
import { currentTaskRequest, defaultPrincipal, type PrincipalOf } from './request-context.js';
import { bindServer } from './server-binding.js';
import { MemorySessionTaskIndex, type SessionTaskIndex } from './session-index.js';
import { createTaskToRun } from '../contract/leases.js';
import { describeCall, failureOf, resultOfFailure, toPollIntervalMs, toSdkTask, toTtlMs } from './task-mapping.js';

export interface SdkTaskStoreOptions {
  /** The principal owning a request's tasks. Default: `authInfo.extra.sub`, else `authInfo.clientId`. */
  principal?: PrincipalOf;
  /**
   * Records which session created each unowned task, for tasks/list. Default: in process memory;
   * with `PostgresTaskStore` pass a `PostgresSessionTaskIndex` on the same schema.
   */
  sessions?: SessionTaskIndex;
  /** `pollInterval` of tasks created without one, in ms. Default 1000, as `InMemoryTaskStore`. */
  defaultPollIntervalMs?: number;
  /** Requested TTLs above this are lowered to it (and "never expires" becomes it). Default: none. */
  maxTtlMs?: number;
  /** Tasks per tasks/list page. Default 10, as `InMemoryTaskStore`. */
  pageSize?: number;
}

/** What the adapter knows about a task created on this instance, for the tool running it. */
export interface CreatedTask {
  token: CancellationToken;
  /** Whether the client asked for a task (`params.task`), or the SDK made one to poll on its behalf. */
  taskAugmented: boolean;
}

const MAX_CACHED_OWNERS = 10_000;

export class SdkTaskStore implements SdkTaskStoreContract {
  private readonly principalOf: PrincipalOf;
  private readonly sessions: SessionTaskIndex;
  private readonly defaultPollIntervalMs: number;
  private readonly maxTtlMs: number | undefined;
  private readonly pageSize: number;
  /** Owners never change and ids are never reused, so a task's owner is read once per instance. */
  private readonly owners = new Map<string, TaskOwner>();
  private readonly created = new Map<string, CreatedTask>();
  private closed = false;

  constructor(
    /** The contract store underneath, for what the SDK's interface cannot say (input requests, …). */
    readonly store: TaskStore,
    options: SdkTaskStoreOptions = {},
  ) {
    this.principalOf = options.principal ?? defaultPrincipal;
    this.sessions = options.sessions ?? new MemorySessionTaskIndex();
    this.defaultPollIntervalMs = options.defaultPollIntervalMs ?? 1000;
    this.maxTtlMs = options.maxTtlMs;
    this.pageSize = options.pageSize ?? 10;
  }

  /**
   * Binds a server built with this store as its `taskStore`; call it before `connect`. From then
   * on every message the server handles runs in a context naming its caller (for ownership), and
   * tasks/result waits on the store (woken the moment the task settles, on any instance, or a
   * message is queued for it) instead of polling.
   */
  attach<S extends McpServer | Server>(server: S): S {
    bindServer(this, server);
    return server;
  }

  /**
   * For a server shutting down: tools started by `taskTool` record no outcome from now on (their
   * tasks stay as they are, and expire at their TTL), so sessions closing under them do not fail
   * them. The store, queue and session index stay open: they are the caller's to close.
   */
  close(): void {
    this.closed = true;
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /**
   * The cancellation token of a task created on this instance, raised by tasks/cancel on any
   * instance and by TTL expiry. `undefined` once the task settled or its token was raised, and for
   * tasks created elsewhere.
   */
  cancellationToken(taskId: string): CancellationToken | undefined {
    return this.created.get(taskId)?.token;
  }

  /** @internal What the tool helper needs about a task it is about to run. */
  createdTask(taskId: string): CreatedTask | undefined {
    return this.created.get(taskId);
  }

  async createTask(taskParams: CreateTaskOptions, _requestId: RequestId, request: Request, sessionId?: string): Promise<Task> {
    const context = currentTaskRequest();
    if (!context) {
      throw new McpError(
        ErrorCode.InternalError,
        'SdkTaskStore: createTask outside a request of an attached server; call attach(server) before connect',
      );
    }
    const owner = context.authInfo ? this.principalOf(context.authInfo) : null;
    const call = describeCall(request);
    const ttlMs = toTtlMs(taskParams.ttl, this.maxTtlMs);
    const pollIntervalMs = toPollIntervalMs(taskParams.pollInterval) ?? this.defaultPollIntervalMs;
    const input = { ...call, ...(ttlMs !== undefined ? { ttlMs } : {}), owner, pollIntervalMs };
    // The SDK runs a task's tool in the process that created it: under this instance's lease.
    const { taskId, token, task } = await this.call(() => createTaskToRun(this.store, input));
    this.rememberOwner(taskId, owner);
    this.created.set(taskId, { token, taskAugmented: (request.params as { task?: unknown } | undefined)?.task !== undefined });
    token.signal.addEventListener('abort', () => this.created.delete(taskId), { once: true });
    if (!task) throw taskNotFound(taskId);
    if (owner === null && sessionId !== undefined) {
      await this.call(() => this.sessions.add(taskId, sessionId, task.createdAt));
    }
    return toSdkTask(task);
  }

  async getTask(taskId: string, _sessionId?: string): Promise<Task | null> {
    const task = await this.readAuthorized(taskId, () => this.readTask(taskId));
    return task ? toSdkTask(task) : null;
  }

  /**
   * A completed task's result; for a failed one, the result the tool stored with it, or else its
   * JSON-RPC error thrown as an `McpError`.
   */
  async getTaskResult(taskId: string, _sessionId?: string): Promise<Result> {
    const snapshot = await this.readAuthorized(taskId, async () => this.settledInThisRequest(taskId) ?? this.store.getTaskResult(taskId));
    if (!snapshot) throw taskNotFound(taskId);
    if (snapshot.result) return snapshot.result as unknown as Result;
    if (snapshot.error) {
      const result = resultOfFailure(snapshot.error);
      if (result) return result as unknown as Result;
      throw new McpError(snapshot.error.code, snapshot.error.message, snapshot.error.data);
    }
    throw noResultStored(taskId);
  }

  async storeTaskResult(taskId: string, status: 'completed' | 'failed', result: Result, _sessionId?: string): Promise<void> {
    await this.authorizeWrite(taskId);
    let stored: boolean;
    if (status === 'completed') stored = await this.call(() => this.store.completeTask(taskId, result as unknown as CallToolResult));
    else if (status === 'failed') stored = await this.call(() => this.store.failTask(taskId, failureOf(result)));
    else throw new McpError(ErrorCode.InvalidParams, `storeTaskResult takes 'completed' or 'failed', not '${String(status)}'`);
    if (!stored) {
      const task = await this.call(() => this.store.getTask(taskId));
      throw task ? resultAlreadyStored(taskId, task.status) : taskNotFound(taskId);
    }
    this.created.delete(taskId);
  }

  /**
   * Routes each status to its transition: `working` / `input_required` to `setStatus`, `cancelled`
   * to `cancelTask` (which raises the token wherever the tool runs), `failed` to `failTask`, and
   * `completed` (no result given) to `completeTask` with empty content.
   */
  async updateTaskStatus(taskId: string, status: Task['status'], statusMessage?: string, _sessionId?: string): Promise<void> {
    await this.authorizeWrite(taskId);
    const message = statusMessage ?? null;
    const changed = await this.call(async (): Promise<boolean> => {
      switch (status) {
        case 'working':
        case 'input_required':
          return this.store.setStatus(taskId, status, message);
        case 'completed':
          return this.store.completeTask(taskId, { content: [] });
        case 'failed':
          return this.store.failTask(taskId, { code: ErrorCode.InternalError, message: message ?? 'Task failed' });
        case 'cancelled': {
          const before = await this.store.getTask(taskId);
          if (!before || isTerminal(before.status)) return false;
          return (await this.store.cancelTask(taskId, message))?.status === 'cancelled';
        }
        default:
          throw new McpError(ErrorCode.InvalidParams, `Unknown task status '${String(status)}'`);
      }
    });
    if (!changed) {
      const task = await this.call(() => this.store.getTask(taskId));
      throw task ? terminalStatus(taskId, task.status, status) : taskNotFound(taskId);
    }
    if (isTerminal(status as TaskStatus)) this.created.delete(taskId);
  }

  async listTasks(cursor?: string, sessionId?: string): Promise<{ tasks: Task[]; nextCursor?: string }> {
    const principal = this.currentPrincipal();
    try {
      if (principal !== null) {
        const page = await this.store.listTasks({ owner: principal, limit: this.pageSize, ...(cursor !== undefined ? { cursor } : {}) });
        return { tasks: page.tasks.map(toSdkTask), ...(page.nextCursor !== null ? { nextCursor: page.nextCursor } : {}) };
      }
      // Without a principal or a session nothing tells one client's tasks from another's.
      if (sessionId === undefined) return { tasks: [] };
      const page = await this.sessions.page(sessionId, cursor, this.pageSize);
      const tasks = await Promise.all(page.taskIds.map((id) => this.store.getTask(id)));
      this.sessions.forget(page.taskIds.filter((_, i) => tasks[i] === null));
      return {
        tasks: tasks.filter((task) => task !== null).map(toSdkTask),
        ...(page.nextCursor !== undefined ? { nextCursor: page.nextCursor } : {}),
      };
    } catch (error) {
      if (cursor !== undefined && isInvalidInput(error)) throw invalidCursor(cursor);
      throw toMcpError(error);
    }
  }

  /** The principal of the request being handled; null without authentication or outside requests. */
  currentPrincipal(): TaskOwner {
    const authInfo: AuthInfo | undefined = currentTaskRequest()?.authInfo;
    return authInfo ? this.principalOf(authInfo) : null;
  }

  /**
   * Reads through `read` only what the caller may see: a foreign task is `null`, like a missing one.
   * A task seen before costs no extra query; a first sight reads the owner alongside.
   */
  private async readAuthorized<T>(taskId: string, read: () => Promise<T | null>): Promise<T | null> {
    const principal = this.currentPrincipal();
    const known = this.owners.get(taskId);
    if (known !== undefined) return ownerMatches(known, principal) ? this.call(read) : null;
    const [value, owner] = await this.call(() => Promise.all([read(), this.store.taskOwner(taskId)]));
    if (!owner) return null;
    this.rememberOwner(taskId, owner.owner);
    return ownerMatches(owner.owner, principal) ? value : null;
  }

  /**
   * In a tasks/result request for the task, its first read takes the result along: the SDK's
   * handler reads the task twice more and then its result, all answered by that one read once the
   * task has settled.
   */
  private async readTask(taskId: string): Promise<TaskObject | null> {
    const settled = this.settledInThisRequest(taskId);
    if (settled) return settled.task;
    const context = currentTaskRequest();
    if (context?.resultOf !== taskId) return this.store.getTask(taskId);
    const snapshot = await this.store.getTaskResult(taskId);
    if (snapshot && isTerminal(snapshot.task.status)) context.settled = snapshot;
    return snapshot?.task ?? null;
  }

  /** The settled task this tasks/result request found (see TaskRequestContext.settled). */
  private settledInThisRequest(taskId: string): TaskSnapshot | undefined {
    const settled = currentTaskRequest()?.settled;
    return settled?.task.taskId === taskId ? settled : undefined;
  }

  private async authorizeWrite(taskId: string): Promise<void> {
    let owner = this.owners.get(taskId);
    if (owner === undefined) {
      const found = await this.call(() => this.store.taskOwner(taskId));
      if (!found) throw taskNotFound(taskId);
      owner = found.owner;
      this.rememberOwner(taskId, owner);
    }
    if (!ownerMatches(owner, this.currentPrincipal())) throw taskNotFound(taskId);
  }

  private rememberOwner(taskId: string, owner: TaskOwner): void {
    this.owners.set(taskId, owner);
    if (this.owners.size > MAX_CACHED_OWNERS) this.owners.delete(this.owners.keys().next().value!);
  }

  private async call<T>(operation: () => Promise<T>): Promise<T> {
    try {
      return await operation();
    } catch (error) {
      throw toMcpError(error);
    }
  }
}
