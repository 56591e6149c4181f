/**
 * The memory store's retention limits: their defaults, and the checks that enforce them against
 * its table.
 *
 * Defaults are deliberately finite (tower-mcp's `TaskRetentionLimits::default`): an in-process map
 * is bounded only by what the store refuses, so an unbounded default would let any client exhaust
 * the process's memory.
 */
import {
  checkedPayload,
  DEFAULT_MAX_PAYLOAD_BYTES,
  encodePayload,
  ownerQuotaExceeded,
  retainedBytesExceeded,
  taskCountExceeded,
} from '../contract/retention.js';
import { TaskStoreError } from '../contract/errors.js';
import type { RetentionLimits, TaskOwner } from '../contract/types.js';
import { sumBytes, type LiveTask, type Sized } from './task-record.js';
import type { TaskTable } from './task-table.js';

/** Live tasks plus tombstones. */
export const DEFAULT_MAX_TASKS = 1024;
/** 64 MiB of payloads across every task. */
export const DEFAULT_MAX_RETAINED_BYTES = 64 * 1024 * 1024;

export class Retention {
  readonly maxTasks: number;
  readonly maxPayloadBytes: number;
  readonly maxRetainedBytes: number;
  /** null: no per-owner quota. */
  readonly maxTasksPerOwner: number | null;

  constructor(
    private readonly table: TaskTable,
    limits: RetentionLimits | undefined,
  ) {
    this.maxTasks = limits?.maxTasks ?? DEFAULT_MAX_TASKS;
    this.maxPayloadBytes = limits?.maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD_BYTES;
    this.maxRetainedBytes = limits?.maxRetainedBytes ?? DEFAULT_MAX_RETAINED_BYTES;
    this.maxTasksPerOwner = limits?.maxTasksPerOwner ?? null;
  }

  /**
   * Throws `retention_limit_exceeded` unless a new task with these arguments may be stored, in the
   * reference's order: the task count, the owner's quota, then the retained bytes. Before refusing
   * for count or bytes, expired tasks are reclaimed: memory held by tasks nobody can see any more
   * should never be the reason a new task is refused.
   */
  admit(owner: TaskOwner, argumentsBytes: number): void {
    if (this.table.size >= this.maxTasks) {
      this.table.purgeExpired();
      if (this.table.size >= this.maxTasks) throw taskCountExceeded(this.maxTasks);
    }
    if (this.maxTasksPerOwner !== null && this.table.countOwnedBy(owner) >= this.maxTasksPerOwner) {
      throw ownerQuotaExceeded(this.maxTasksPerOwner);
    }
    this.reserve(argumentsBytes);
  }

  /**
   * The value as the store keeps it, with its size, or `retention_limit_exceeded` when it is over
   * `maxPayloadBytes`. What is kept is parsed back from its JSON text, as the PostgreSQL store keeps
   * it: a copy the caller cannot change later, holding only what JSON shows of the value (a proxy or
   * a getter is read once, here).
   */
  payload<T>(what: string, value: T): Sized<T> {
    const { json, bytes } = checkedPayload(what, value, this.maxPayloadBytes);
    return { value: JSON.parse(json) as T, bytes };
  }

  /** A status message is bounded like a payload (it is not charged to `maxRetainedBytes`). */
  checkMessage(message: string | null): void {
    if (message !== null) checkedPayload('message', message, this.maxPayloadBytes);
  }

  /** Throws `retention_limit_exceeded` unless `delta` more bytes fit under `maxRetainedBytes`. */
  reserve(delta: number): void {
    if (!this.fits(delta)) throw retainedBytesExceeded(this.table.retainedBytes + delta, this.maxRetainedBytes);
  }

  /**
   * A result or error as kept (like {@link payload}) with its size, if it fits both byte limits. When it does not, the task is
   * ended with the fixed failure (its waiters wake to it) and the limit error is thrown. (A failure's
   * status message, "Task failed: " and the error's message, is always shorter than the error.)
   */
  outcome<T>(task: LiveTask, what: 'result' | 'error', value: T): Sized<T> {
    const encoded = encodePayload(what, value, this.maxPayloadBytes);
    let refusal = encoded instanceof TaskStoreError ? encoded : null;
    if (!(encoded instanceof TaskStoreError)) {
      // Finishing drops the outstanding requests, so only the difference has to fit.
      const delta = encoded.bytes - sumBytes(task.outstanding);
      if (!this.fits(delta)) refusal = retainedBytesExceeded(this.table.retainedBytes + delta, this.maxRetainedBytes);
      else return { value: JSON.parse(encoded.json) as T, bytes: encoded.bytes };
    }
    this.table.failForRetention(task);
    throw refusal;
  }

  /** Whether `delta` more bytes fit, reclaiming expired payloads if needed. */
  private fits(delta: number): boolean {
    if (delta <= 0 || this.table.retainedBytes + delta <= this.maxRetainedBytes) return true;
    this.table.reclaimExpiredPayloads();
    return this.table.retainedBytes + delta <= this.maxRetainedBytes;
  }
}
