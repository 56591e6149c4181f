/**
 * The TaskStore contract: the TypeScript form of tower-mcp's `TaskStore` trait.
 *
 * Every store in this package (and any store a user writes) implements {@link TaskStore} and
 * passes the shared conformance suite in `test/conformance/`.
 */
import type { CancellationToken } from './cancellation.js';

export type TaskStatus = 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled';

export const TASK_STATUSES: readonly TaskStatus[] = [
  'working',
  'input_required',
  'completed',
  'failed',
  'cancelled',
];

/** Terminal states are immutable: no transition leaves them. */
export function isTerminal(status: TaskStatus): boolean {
  return status === 'completed' || status === 'failed' || status === 'cancelled';
}

/**
 * The authenticated principal a task belongs to. `null` means the creating request carried no
 * principal; `''` is a real owner, distinct from `null`.
 */
export type TaskOwner = string | null;

/**
 * Whether `principal` may act on a task owned by `owner`. Plain equality: an unowned task is not
 * open to every principal, because a request carrying a principal is a different security context.
 */
export function ownerMatches(owner: TaskOwner, principal: TaskOwner): boolean {
  return owner === principal;
}

/** Wire object (SEP-2663 field names). Absent fields are omitted, never undefined-valued. */
export interface TaskObject {
  taskId: string;
  status: TaskStatus;
  statusMessage?: string;
  /** ISO-8601 UTC with milliseconds, e.g. "2026-12-02T08:01:15.123Z". */
  createdAt: string;
  lastUpdatedAt: string;
  /** `null`: never expires. */
  ttlMs: number | null;
  pollIntervalMs?: number;
  _meta?: Record<string, unknown>;
}

export interface CallToolResult {
  content: unknown[];
  isError?: boolean;
  structuredContent?: Record<string, unknown>;
  _meta?: Record<string, unknown>;
}

export interface JsonRpcError {
  code: number;
  message: string;
  data?: unknown;
}

export type InputRequest =
  | { method: 'elicitation/create'; params: Record<string, unknown> }
  | { method: 'sampling/createMessage'; params: Record<string, unknown> }
  | { method: 'roots/list'; params?: Record<string, unknown> };

/** Request key -> request. A key names one request over the task's whole lifetime. */
export type InputRequests = Record<string, InputRequest>;

/** Request key -> ElicitResult | CreateMessageResult | ListRootsResult. */
export type InputResponses = Record<string, Record<string, unknown>>;

export interface TaskSnapshot {
  task: TaskObject;
  result: CallToolResult | null;
  error: JsonRpcError | null;
}

/**
 * `expired` is reported only while the store still holds the record (live row or tombstone), and
 * carries the owner so a router can authorize before disclosing the difference from `missing`.
 */
export type TaskPresence =
  | { state: 'present'; owner: TaskOwner }
  | { state: 'expired'; owner: TaskOwner }
  | { state: 'missing' };

export interface AppliedInputResponses {
  /** Sorted. Keys that answered an outstanding request. */
  accepted: string[];
  /** Sorted. Never issued, already answered, or superseded: a retrying client cannot tell these apart. */
  ignored: string[];
  /** Sorted. */
  stillOutstanding: string[];
  /** `stillOutstanding.length === 0`: the task is back to `working`. */
  complete: boolean;
}

export interface TaskResumeContext {
  toolName: string;
  arguments: unknown;
  /** Every answer so far, accumulated across rounds. */
  inputResponses: InputResponses;
  /** The same cancellation domain `createTask` returned. */
  token: CancellationToken;
}

export interface CreateTaskInput {
  toolName: string;
  /** Any JSON value. Default `null`. */
  arguments?: unknown;
  /** `undefined`: the store's default (300000). `null`: never expires. */
  ttlMs?: number | null;
  /** Default `null`. */
  owner?: TaskOwner;
  pollIntervalMs?: number;
}

export interface ListTasksOptions {
  status?: TaskStatus;
  /** `undefined` lists every owner; `null` only unowned tasks; `''` only tasks owned by `''`. */
  owner?: TaskOwner;
  /** Opaque: the `nextCursor` of the previous page. */
  cursor?: string;
  /** Page size, 1 to 1000. Default 100. */
  limit?: number;
}

export interface TaskPage {
  tasks: TaskObject[];
  nextCursor: string | null;
}

export interface TaskStore {
  createTask(input: CreateTaskInput): Promise<{ taskId: string; token: CancellationToken }>;
  /** `null`: unknown or expired. */
  taskOwner(taskId: string): Promise<{ owner: TaskOwner } | null>;
  taskPresence(taskId: string): Promise<TaskPresence>;
  getTask(taskId: string): Promise<TaskObject | null>;
  getTaskResult(taskId: string): Promise<TaskSnapshot | null>;
  /**
   * Resolves with the snapshot once the task is terminal, or `null` if it is unknown or expires
   * first. An aborted signal rejects with the signal's reason.
   */
  waitForCompletion(taskId: string, options?: { signal?: AbortSignal }): Promise<TaskSnapshot | null>;
  /** Never lists expired tasks. */
  listTasks(options?: ListTasksOptions): Promise<TaskPage>;
  requireInput(taskId: string, requests: InputRequests, message?: string | null): Promise<boolean>;
  outstandingInputRequests(taskId: string): Promise<InputRequests | null>;
  applyInputResponses(taskId: string, responses: InputResponses): Promise<AppliedInputResponses | null>;
  inputResponses(taskId: string): Promise<InputResponses | null>;
  resumeContext(taskId: string): Promise<TaskResumeContext | null>;
  setStatus(taskId: string, status: TaskStatus, message?: string | null): Promise<boolean>;
  setTtl(taskId: string, ttlMs: number): Promise<boolean>;
  setTaskMeta(taskId: string, meta: Record<string, unknown>): Promise<boolean>;
  completeTask(taskId: string, result: CallToolResult): Promise<boolean>;
  failTask(taskId: string, error: JsonRpcError): Promise<boolean>;
  cancelTask(taskId: string, reason?: string | null): Promise<TaskObject | null>;
  discardTask(taskId: string): Promise<boolean>;
  close(): Promise<void>;
}

export interface RetentionLimits {
  /** Live tasks + tombstones (memory store: default 1024; the PostgreSQL store has no such limit). */
  maxTasks?: number;
  /** One payload as compact JSON UTF-8 bytes (default 4 MiB). */
  maxPayloadBytes?: number;
  /** All payloads together (memory store: default 64 MiB). */
  maxRetainedBytes?: number;
  /** Tasks per owner that have not expired, in any status (default: no quota). */
  maxTasksPerOwner?: number;
}
