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

/**
 * A task store. Every method validates its arguments first (a malformed call throws
 * `invalid_input` and changes nothing, whatever the task's state); on a closed store every method
 * rejects with `backend`, whatever its arguments.
 *
 * An expired task is indistinguishable from an unknown one: every read and transition answers
 * `null` / `false` once its TTL has elapsed since creation, whether or not it has been cleaned up,
 * so a retention window cannot be probed. No write revives an expired task.
 */
export interface TaskStore {
  /**
   * A `working` task, and the token its handler should watch. Retention limits are checked before
   * anything is stored.
   */
  createTask(input: CreateTaskInput): Promise<{ taskId: string; token: CancellationToken }>;
  /** `null`: unknown or expired. */
  taskOwner(taskId: string): Promise<{ owner: TaskOwner } | null>;
  /**
   * `expired` while the store still holds the record (an expired task not yet cleaned up, or its
   * tombstone), so a router can tell the task's owner "that task expired" instead of "no such
   * task"; the owner comes with it because the router must authorize before disclosing the
   * difference. One lookup answers both, so expiry cannot change between them.
   */
  taskPresence(taskId: string): Promise<TaskPresence>;
  getTask(taskId: string): Promise<TaskObject | null>;
  getTaskResult(taskId: string): Promise<TaskSnapshot | null>;
  /**
   * Resolves with the snapshot once the task is terminal (at once if it already is), or `null` if
   * it is unknown, expires or is discarded first; rejects with `backend` if the store closes.
   * A raised token on a running task is not completion: the outcome exists only once something
   * records it. An aborted signal rejects with the signal's reason, an already-aborted one before
   * the task is even looked up.
   */
  waitForCompletion(taskId: string, options?: { signal?: AbortSignal }): Promise<TaskSnapshot | null>;
  /**
   * One page of live tasks, oldest first (creation time, then task id). The cursor is a keyset
   * position, not an offset, so tasks created, finished or expiring between pages never make a
   * later page skip or repeat one. Never lists expired tasks.
   */
  listTasks(options?: ListTasksOptions): Promise<TaskPage>;
  /**
   * Parks the task in `input_required` on `requests`, which replace the outstanding set; keys left
   * out are superseded. A key names one question for the task's whole life: a spent key (answered
   * or superseded), or an outstanding one with a different request, throws `invalid_transition`
   * and changes nothing; re-issuing an outstanding key with the identical request is allowed.
   * `false` for an unknown, expired or terminal task.
   */
  requireInput(taskId: string, requests: InputRequests, message?: string | null): Promise<boolean>;
  /** `{}` unless the task is `input_required`; `null` when unknown or expired. */
  outstandingInputRequests(taskId: string): Promise<InputRequests | null>;
  /**
   * Records answers to outstanding requests and reports what happened to every key. Keys that are
   * not outstanding are ignored, not refused (a retrying client cannot tell them apart); answering
   * the last outstanding one returns the task to `working`. `null` for an unknown, expired or
   * terminal task.
   */
  applyInputResponses(taskId: string, responses: InputResponses): Promise<AppliedInputResponses | null>;
  /** Every answer so far, across all rounds. */
  inputResponses(taskId: string): Promise<InputResponses | null>;
  /**
   * What a router needs to run the handler again after its questions were answered: the original
   * arguments, every answer so far, and the task's token, so expiry or cancellation stops the
   * replayed run too.
   */
  resumeContext(taskId: string): Promise<TaskResumeContext | null>;
  /**
   * Progress for a running task. A terminal status throws `invalid_transition` even for an unknown
   * id: terminal states are reached only through `completeTask`, `failTask` and `cancelTask`, which
   * record the outcome. Without a message the current one is kept.
   */
  setStatus(taskId: string, status: TaskStatus, message?: string | null): Promise<boolean>;
  /**
   * Changes the TTL, still measured from creation; works on terminal tasks. A TTL already in the
   * past expires the task at once, raising its token. `false` for an unknown or expired task.
   */
  setTtl(taskId: string, ttlMs: number): Promise<boolean>;
  /** Replaces `_meta`, on terminal tasks too, without touching `lastUpdatedAt`. */
  setTaskMeta(taskId: string, meta: Record<string, unknown>): Promise<boolean>;
  /**
   * Records the tool's result. A result with `isError: true` completes the task too: the tool ran
   * and answered with a domain error. A result over the limits is not kept, but the task does not
   * stay running either: it ends `failed` with a fixed, content-free error, its waiters wake, and
   * the call throws `retention_limit_exceeded`.
   */
  completeTask(taskId: string, result: CallToolResult): Promise<boolean>;
  /**
   * For a call that produced no result at all; the JSON-RPC error is kept whole. An oversized
   * error, or a status message ("Task failed: " and its message) over `maxPayloadBytes`, is handled
   * like an oversized result.
   */
  failTask(taskId: string, error: JsonRpcError): Promise<boolean>;
  /**
   * Raises the task's token and, if it is still running, records it as `cancelled`. The token is
   * raised even for a finished task, so work still winding down is told to stop; the outcome does
   * not change, which is why the returned object may read `completed`. `null` for an unknown or
   * expired task.
   */
  cancelTask(taskId: string, reason?: string | null): Promise<TaskObject | null>;
  /**
   * Removes a task in any state, an expired one or its tombstone included, without raising its
   * token: there is no work to stop. Waiters get `null`. `false` when there was nothing to remove.
   */
  discardTask(taskId: string): Promise<boolean>;
  /**
   * Pending waits reject with `backend`; tokens are not raised, because closing a store is not a
   * decision to stop anyone's work. Closing twice is harmless.
   */
  close(): Promise<void>;
}

/** What one cleanup pass did. */
export interface ReapResult {
  /** Expired live tasks whose payload was dropped, leaving a tombstone. */
  tombstoned: number;
  /** Tombstones older than the retention window, removed for good. */
  purged: number;
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
