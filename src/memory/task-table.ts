/**
 * The memory store's table: every task it holds (live or tombstone), the bytes their payloads
 * occupy, and each task's expiry.
 *
 * Expiry has two halves that run on different clocks. Signalling is exact: a timer at each task's
 * deadline (and any lookup that finds the deadline passed) raises the token with reason 'expired'
 * and wakes waiters with null, exactly once. Reclaiming is periodic: a cleanup pass turns expired
 * tasks into tombstones and purges old tombstones, so memory is freed in batches while the task has
 * been invisible since its deadline.
 */
import { cloneJson } from '../contract/json.js';
import { RETENTION_FAILURE_ERROR, statusMessages } from '../contract/messages.js';
import { DeadlineQueue } from '../contract/timers.js';
import type { TaskOwner, TaskStatus } from '../contract/types.js';
import { isIssuableTaskId } from '../contract/validation.js';
import type { EffectQueue } from './effect-queue.js';
import { deadlineOf, isExpiredAt, retainedBytesOf, toSnapshot, type LiveTask, type TaskEntry } from './task-record.js';
import { takeWaiters, wakeWaiters, type Waiter } from './waiters.js';

export class TaskTable {
  private readonly entries = new Map<string, TaskEntry>();
  /** Sum of {@link retainedBytesOf} over every live task; tombstones hold no payload. */
  private retained = 0;
  private readonly deadlines = new DeadlineQueue();

  constructor(
    private readonly effects: EffectQueue,
    /** Told the id of every task whose record changes, or whose expiry or removal is signalled. */
    private readonly onChange: (taskId: string) => void = () => {},
  ) {}

  /** Records held, live tasks and tombstones alike. */
  get size(): number {
    return this.entries.size;
  }

  get retainedBytes(): number {
    return this.retained;
  }

  has(taskId: string): boolean {
    return this.entries.has(taskId);
  }

  /** Whatever is held under `taskId`, expired or not. Ids this package never issues hold nothing. */
  entry(taskId: string): TaskEntry | undefined {
    return isIssuableTaskId(taskId) ? this.entries.get(taskId) : undefined;
  }

  /**
   * The live task for `taskId`, or undefined when unknown or expired. Finding a task past its
   * deadline whose timer has not fired yet signals the expiry right here, so the token is raised by
   * the time anyone can observe that the task is gone.
   */
  live(taskId: string): LiveTask | undefined {
    const entry = this.entry(taskId);
    if (entry === undefined || entry.kind !== 'live') return undefined;
    return this.expireIfDue(entry, Date.now()) ? undefined : entry;
  }

  /** Every live, unexpired task, in no particular order. */
  liveTasks(): LiveTask[] {
    const now = Date.now();
    const tasks: LiveTask[] = [];
    for (const entry of this.entries.values()) {
      if (entry.kind === 'live' && !this.expireIfDue(entry, now)) tasks.push(entry);
    }
    return tasks;
  }

  /** An owner's unexpired tasks, in any status. */
  countOwnedBy(owner: TaskOwner): number {
    const now = Date.now();
    let owned = 0;
    for (const entry of this.entries.values()) {
      if (entry.kind === 'live' && entry.owner === owner && !isExpiredAt(entry, now)) owned++;
    }
    return owned;
  }

  /** Signals the expiry of a task past its deadline; true when it was. */
  expireIfDue(task: LiveTask, nowMs: number): boolean {
    if (!isExpiredAt(task, nowMs)) return false;
    this.signalExpiry(task);
    return true;
  }

  insert(task: LiveTask): void {
    this.entries.set(task.taskId, task);
    this.retained += retainedBytesOf(task);
    // A TTL of 0 is already over: this raises the token before the caller sees it.
    this.armExpiry(task);
  }

  /** Applies a change to a task and keeps the byte total in step with it. */
  update(task: LiveTask, change: () => void): void {
    const before = retainedBytesOf(task);
    change();
    this.retained += retainedBytesOf(task) - before;
    this.changed(task.taskId);
  }

  /** Reports a change that {@link update} did not make (a cancellation request on a finished task). */
  changed(taskId: string): void {
    this.effects.defer(() => this.onChange(taskId));
  }

  /** Moves a task to a terminal status, ending its lease, and wakes its waiters with the final snapshot. */
  finish(task: LiveTask, status: TaskStatus, message: string, record: () => void = () => {}): void {
    this.update(task, () => {
      record();
      task.lease = null;
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

  /**
   * Ends a task whose outcome could not be kept, as tower-mcp does: `failed` with the fixed error,
   * and every payload it held dropped, so nothing of the rejected content (or anything else the task
   * carried) survives. The fixed error is the store's own constant, not a caller's payload, so it is
   * not charged; that keeps the failure possible however full the store is.
   */
  failForRetention(task: LiveTask): void {
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

  /**
   * Removes whatever is held under `taskId` without raising a token; waiters get null, since the
   * task is now unknown. False when nothing was held.
   */
  remove(taskId: string): boolean {
    const entry = this.entry(taskId);
    if (entry === undefined) return false;
    this.entries.delete(taskId);
    if (entry.kind === 'live') {
      this.stopTimer(entry);
      this.retained -= retainedBytesOf(entry);
      const waiters = takeWaiters(entry.waiters);
      this.effects.defer(() => wakeWaiters(waiters, null));
    }
    this.changed(taskId);
    return true;
  }

  /** (Re)arms the task's deadline timer; a deadline already past expires the task now. */
  armExpiry(task: LiveTask): void {
    this.stopTimer(task);
    this.changed(task.taskId);
    const deadline = deadlineOf(task);
    if (deadline === null) return;
    if (Date.now() >= deadline) {
      this.signalExpiry(task);
      return;
    }
    task.cancelTimer = this.deadlines.schedule(deadline, () => {
      task.cancelTimer = null;
      // Discarded, or the table was cleared by close(): nothing to signal.
      if (this.entries.get(task.taskId) !== task) return;
      this.effects.run(() => this.signalExpiry(task));
    });
  }

  /**
   * One cleanup pass. Tombstones older than `tombstoneRetentionMs` are purged first, then every
   * expired live task becomes a tombstone, so a tombstone made by this pass always survives it.
   */
  reap(tombstoneRetentionMs: number): { tombstoned: number; purged: number } {
    const now = Date.now();
    let purged = 0;
    let tombstoned = 0;
    for (const [taskId, entry] of this.entries) {
      if (entry.kind === 'tombstone' && now - entry.expiredAtMs >= tombstoneRetentionMs) {
        this.entries.delete(taskId);
        purged++;
      }
    }
    for (const entry of this.entries.values()) {
      if (entry.kind === 'live' && isExpiredAt(entry, now)) {
        this.tombstone(entry);
        tombstoned++;
      }
    }
    return { tombstoned, purged };
  }

  /** Turns every expired live task into a tombstone, releasing its bytes. */
  reclaimExpiredPayloads(): void {
    const now = Date.now();
    for (const entry of this.entries.values()) {
      if (entry.kind === 'live' && isExpiredAt(entry, now)) this.tombstone(entry);
    }
  }

  /** Removes every expired task and every tombstone, whatever its age, to free task slots. */
  purgeExpired(): void {
    this.reclaimExpiredPayloads();
    for (const [taskId, entry] of this.entries) {
      if (entry.kind === 'tombstone') this.entries.delete(taskId);
    }
  }

  /** Empties the table and stops every timer, returning the waiters that were still parked. */
  clear(): Waiter[] {
    const waiters: Waiter[] = [];
    for (const entry of this.entries.values()) {
      if (entry.kind !== 'live') continue;
      this.stopTimer(entry);
      waiters.push(...takeWaiters(entry.waiters));
    }
    this.entries.clear();
    this.retained = 0;
    return waiters;
  }

  /** Raises the token with reason 'expired' and wakes waiters with null, exactly once per task. */
  private signalExpiry(task: LiveTask): void {
    if (task.expirySignalled) return;
    task.expirySignalled = true;
    this.stopTimer(task);
    const waiters = takeWaiters(task.waiters);
    this.effects.defer(() => {
      task.source.cancel('expired');
      wakeWaiters(waiters, null);
    });
    this.changed(task.taskId);
  }

  /** Drops an expired task's payload, leaving a tombstone with its owner and expiry time. */
  private tombstone(task: LiveTask): void {
    this.signalExpiry(task);
    this.retained -= retainedBytesOf(task);
    this.entries.set(task.taskId, {
      kind: 'tombstone',
      taskId: task.taskId,
      owner: task.owner,
      expiredAtMs: deadlineOf(task)!,
    });
  }

  private stopTimer(task: LiveTask): void {
    task.cancelTimer?.();
    task.cancelTimer = null;
  }
}
