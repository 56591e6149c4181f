/**
 * What the memory store keeps per task id: a live record, or the tombstone an expired record
 * leaves behind until it is purged.
 */
import { CancellationSource } from '../contract/cancellation.js';
import type {
  CallToolResult,
  InputRequest,
  InputRequests,
  InputResponses,
  JsonRpcError,
  TaskObject,
  TaskOwner,
  TaskSnapshot,
  TaskStatus,
} from '../contract/types.js';
import { cloneJson, compareKeys } from '../contract/json.js';
import { statusMessages } from '../contract/messages.js';
import type { CancelDeadline } from '../contract/timers.js';
import type { Waiter } from './waiters.js';

/** A stored payload and its size, measured once when it was accepted. */
export interface Sized<T> {
  readonly value: T;
  readonly bytes: number;
}

export interface LiveTask {
  readonly kind: 'live';
  readonly taskId: string;
  readonly owner: TaskOwner;
  readonly toolName: string;
  arguments: Sized<unknown>;
  status: TaskStatus;
  statusMessage: string;
  readonly createdAtMs: number;
  lastUpdatedAtMs: number;
  ttlMs: number | null;
  readonly pollIntervalMs: number | undefined;
  meta: Sized<Record<string, unknown>> | null;
  result: Sized<CallToolResult> | null;
  error: Sized<JsonRpcError> | null;
  /** The requests last issued by `requireInput` and not yet answered, in key order. */
  outstanding: Map<string, Sized<InputRequest>>;
  /** Spent keys: a key in either set may never name a request again. */
  readonly answeredKeys: Set<string>;
  readonly supersededKeys: Set<string>;
  /** Every accepted answer, accumulated across rounds. */
  readonly responses: Map<string, Sized<Record<string, unknown>>>;
  readonly source: CancellationSource;
  /** Set once expiry has raised the token and woken waiters, so it happens exactly once. */
  expirySignalled: boolean;
  cancelTimer: CancelDeadline | null;
  readonly waiters: Set<Waiter>;
  /** The execution lease (src/contract/leases.ts); null when no runner holds one. */
  lease: MemoryLease | null;
}

/** A lease as the PostgreSQL store's task_leases row holds it. */
export interface MemoryLease {
  /** null: rescued, waiting for a resume hook to claim it by `expiresAtMs`. */
  runnerId: string | null;
  expiresAtMs: number;
  attempts: number;
  lostRunner: string | null;
  lostStatus: string | null;
}

/**
 * An expired task with its payload dropped. It keeps the owner so `taskPresence` can tell that
 * owner "expired" rather than "missing", and the expiry time so the store knows when to purge it.
 */
interface Tombstone {
  readonly kind: 'tombstone';
  readonly taskId: string;
  readonly owner: TaskOwner;
  readonly expiredAtMs: number;
}

export type TaskEntry = LiveTask | Tombstone;

/** A new `working` task. */
export function newTask(task: {
  taskId: string;
  owner: TaskOwner;
  toolName: string;
  arguments: Sized<unknown>;
  ttlMs: number | null;
  pollIntervalMs: number | undefined;
}): LiveTask {
  const now = Date.now();
  return {
    kind: 'live',
    ...task,
    status: 'working',
    statusMessage: statusMessages.created,
    createdAtMs: now,
    lastUpdatedAtMs: now,
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
    lease: null,
  };
}

/** When the task expires, or null when it never does. The TTL runs from creation. */
export function deadlineOf(task: LiveTask): number | null {
  return task.ttlMs === null ? null : task.createdAtMs + task.ttlMs;
}

export function isExpiredAt(task: LiveTask, nowMs: number): boolean {
  const deadline = deadlineOf(task);
  return deadline !== null && nowMs >= deadline;
}

export function sumBytes(payloads: Map<string, Sized<unknown>>): number {
  let total = 0;
  for (const payload of payloads.values()) total += payload.bytes;
  return total;
}

/** The task's charge against `maxRetainedBytes`: every payload it currently holds. */
export function retainedBytesOf(task: LiveTask): number {
  return (
    task.arguments.bytes +
    (task.meta?.bytes ?? 0) +
    (task.result?.bytes ?? 0) +
    (task.error?.bytes ?? 0) +
    sumBytes(task.outstanding) +
    sumBytes(task.responses)
  );
}

const iso = (ms: number): string => new Date(ms).toISOString();

/** A fresh wire object; optional fields the task lacks are omitted, never undefined-valued. */
export function toTaskObject(task: LiveTask): TaskObject {
  return {
    taskId: task.taskId,
    status: task.status,
    statusMessage: task.statusMessage,
    createdAt: iso(task.createdAtMs),
    lastUpdatedAt: iso(task.lastUpdatedAtMs),
    ttlMs: task.ttlMs,
    ...(task.pollIntervalMs !== undefined && { pollIntervalMs: task.pollIntervalMs }),
    ...(task.meta !== null && { _meta: cloneJson(task.meta.value) }),
  };
}

export function toSnapshot(task: LiveTask): TaskSnapshot {
  return {
    task: toTaskObject(task),
    result: task.result ? cloneJson(task.result.value) : null,
    error: task.error ? cloneJson(task.error.value) : null,
  };
}

/**
 * A fresh key -> value object, its keys in code-point order as every store gives them, whatever
 * order they were issued or answered in. `Object.fromEntries` defines own properties, so no key is
 * special.
 */
function toRecord<T>(payloads: Map<string, Sized<T>>): Record<string, T> {
  const entries = [...payloads].sort(([a], [b]) => compareKeys(a, b));
  return Object.fromEntries(entries.map(([key, payload]) => [key, cloneJson(payload.value)]));
}

export const toInputRequests = (task: LiveTask): InputRequests => toRecord(task.outstanding);
export const toInputResponses = (task: LiveTask): InputResponses => toRecord(task.responses);
