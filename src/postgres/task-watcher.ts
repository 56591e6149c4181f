/**
 * What this instance watches in the database on behalf of its callers: completion waiters and the
 * cancellation tokens it handed out. Both are woken by the same mechanism:
 *
 *   a NOTIFY for the task, this instance's own change to it, a deadline timer armed from the
 *   database's own deadline, or (while the listener is down, or in poll-only mode) a slow poll
 *
 * and each wake re-reads the rows, because the row is the truth and a notification only a hint.
 * Re-reads are batched: one query serves every task that woke in the same tick.
 */
import { CancellationSource, type CancellationToken } from '../contract/cancellation.js';
import { closedWhileWaiting } from '../contract/errors.js';
import { cloneJson } from '../contract/json.js';
import { DeadlineQueue, type CancelDeadline } from '../contract/timers.js';
import type { TaskSnapshot } from '../contract/types.js';
import { isServerUnavailable, isSessionLost } from './backend-error.js';
import type { NotificationListener } from './listener.js';
import type { TaskGate } from './task-gate.js';
import { parseTaskEvent, type TaskEvent } from './task-events.js';
import { toSnapshot, type TaskState } from './task-rows.js';
import type { TaskStatements } from './task-statements.js';

/** How soon a wait whose flag was lost with the connection tries again. */
const REFLAG_DELAY_MS = 250;

export interface TaskWatcherOptions {
  statements: Pick<TaskStatements, 'markAwaited' | 'markAwaitedUnlessLocked' | 'states'>;
  db: Parameters<TaskStatements['states']['execute']>[0];
  listener: NotificationListener | null;
  /** Flagging a task awaited is an UPDATE: it waits its turn for the row like every write. */
  gate: TaskGate;
  /** What a wait rejects with when flagging its task failed: the store's error for the failure. */
  failure: (error: unknown) => Promise<unknown>;
  /** How often waiters and tokens are re-read while notifications cannot be relied on. */
  backstopPollMs: number;
}

interface Waiter {
  resolve(snapshot: TaskSnapshot | null): void;
  reject(error: unknown): void;
}

export class TaskWatcher {
  private readonly waiters = new Map<string, Set<Waiter>>();
  private readonly tokens = new Map<string, CancellationSource>();
  private readonly deadlines = new Map<string, CancelDeadline>();
  private readonly deadlineQueue = new DeadlineQueue();
  private readonly due = new Set<string>();
  private recheckScheduled = false;
  /** New waiters by task, whose tasks are flagged awaited together, once per tick. */
  private readonly unflagged = new Map<string, Waiter[]>();
  private flagScheduled = false;
  private pollTimer: NodeJS.Timeout | null = null;
  /**
   * Watched tasks whose re-read failed, with that read's number: the poll runs until each is read
   * by a re-read begun after it. One begun before may hold a snapshot older than the change that
   * prompted the failed one, and a re-read of other tasks tells nothing about these.
   */
  private readonly unread = new Map<string, number>();
  private rereads = 0;
  private closed = false;
  private readonly statements: TaskWatcherOptions['statements'];
  private readonly db: TaskWatcherOptions['db'];
  private readonly listener: NotificationListener | null;
  private readonly gate: TaskGate;
  private readonly failure: TaskWatcherOptions['failure'];
  private readonly backstopPollMs: number;

  constructor(options: TaskWatcherOptions) {
    this.statements = options.statements;
    this.db = options.db;
    this.listener = options.listener;
    this.gate = options.gate;
    this.failure = options.failure;
    this.backstopPollMs = options.backstopPollMs;
    this.listener?.onNotification((payload) => {
      const event = parseTaskEvent(payload);
      if (event) this.announced(event);
    });
    // Whatever was announced while the listener was away is found by reading every watched row.
    this.listener?.onStateChange(({ state }) => {
      if (state === 'listening') this.recheck(...this.watchedIds());
      this.updatePolling();
    });
  }

  /** Keeps the token `createTask` returns; raised at once if the task is born expired (ttl 0). */
  holdToken(taskId: string, msUntilExpiry: number | null): CancellationToken {
    return this.tokenFor(taskId, { cancelRequested: false, msUntilExpiry });
  }

  /** The token held for the task, or a new one held from now on, raised if it already should be. */
  tokenFor(taskId: string, state: { cancelRequested: boolean; msUntilExpiry: number | null }): CancellationToken {
    const held = this.tokens.get(taskId);
    if (held) return held.token;
    const source = new CancellationSource();
    if (state.cancelRequested || (state.msUntilExpiry !== null && state.msUntilExpiry <= 0)) {
      source.cancel(state.cancelRequested ? 'cancelled' : 'expired');
      return source.token;
    }
    this.tokens.set(taskId, source);
    this.armDeadline(taskId, state.msUntilExpiry);
    this.updatePolling();
    return source.token;
  }

  /**
   * This instance changed the task's status. Its NOTIFY wakes the waiters, unless notifications
   * cannot be relied on: then this does, rather than the next poll.
   */
  changedHere(taskId: string): void {
    if (!this.notificationsTrusted() && this.waiters.has(taskId)) this.recheck(taskId);
  }

  /** This instance cancelled the task: raise at once rather than wait for our own NOTIFY. */
  cancelled(taskId: string): void {
    this.raiseToken(taskId, 'cancelled');
  }

  /** This instance moved the task's deadline. */
  deadlineMoved(taskId: string, msUntilExpiry: number | null): void {
    if (msUntilExpiry !== null && msUntilExpiry <= 0) this.raiseToken(taskId, 'expired');
    if (this.isWatching(taskId)) this.recheck(taskId);
  }

  /** This instance discarded the task: its token is forgotten, not raised; waiters learn it is gone. */
  discarded(taskId: string): void {
    this.tokens.delete(taskId);
    if (this.isWatching(taskId)) this.recheck(taskId);
    else this.clearDeadline(taskId);
  }

  /**
   * Another instance (or this one, or plain SQL) changed a task. Even a cancel is re-read before
   * its token is raised: any role that can connect can NOTIFY on the channel, and only the row
   * says what happened. A change of status alone is news to waiters only: the trigger names a
   * change of the cancel request or the deadline `cancelled` or `ttl`, so a token cannot be
   * raised by it, and the instance holding a settling task's token is spared a read.
   */
  private announced({ kind, taskId }: TaskEvent): void {
    if (kind === 'status' ? this.waiters.has(taskId) : this.isWatching(taskId)) this.recheck(taskId);
  }

  /** Not an async function: its frame would stay in memory as long as the wait (see timeWait). */
  waitForCompletion(taskId: string, signal?: AbortSignal): Promise<TaskSnapshot | null> {
    let waiter!: Waiter;
    const settled = new Promise<TaskSnapshot | null>((resolve, reject) => {
      waiter = { resolve, reject };
      if (!signal) return;
      const onAbort = () => this.removeWaiter(taskId, waiter, signal.reason);
      signal.addEventListener('abort', onAbort, { once: true });
      const settle = <A>(end: (value: A) => void) => (value: A) => {
        signal.removeEventListener('abort', onAbort);
        end(value);
      };
      waiter = { resolve: settle(resolve), reject: settle(reject) };
    });
    // Register in memory before reading, so a wake between the read and the wait is not lost.
    this.addWaiter(taskId, waiter);
    // Not awaited here: an abort (or close) must end the wait even while the flag is written.
    this.flagAwaited(taskId, waiter);
    return settled;
  }

  /**
   * Asks the settling transaction to NOTIFY (only awaited tasks are announced), then reads the row.
   * The flags of every wait begun in one tick are one statement: 10,000 waits are a few UPDATEs,
   * not 10,000 transactions.
   */
  private flagAwaited(taskId: string, waiter: Waiter): void {
    const waiting = this.unflagged.get(taskId);
    if (waiting) waiting.push(waiter);
    else this.unflagged.set(taskId, [waiter]);
    if (this.flagScheduled) return;
    this.flagScheduled = true;
    setImmediate(() => {
      this.flagScheduled = false;
      const batch = new Map(this.unflagged);
      this.unflagged.clear();
      if (!this.closed) void this.flagBatch(batch);
    });
  }

  /**
   * `retrying`: the waits were registered before the server went away, so while it cannot be
   * reached they keep waiting and try again, rather than fail like a call made while it is down.
   */
  private async flagBatch(batch: Map<string, Waiter[]>, retrying = false): Promise<void> {
    let locked: Set<string>;
    try {
      const { rows } = await this.statements.markAwaitedUnlessLocked.execute(this.db, { taskIds: [...batch.keys()] });
      locked = new Set(rows.map((row) => row.task_id));
    } catch (error) {
      // A wait begun as the server went away is still a wait: it is flagged again once it is back.
      if (this.worthRetrying(error, retrying)) return this.reflagLater(batch);
      const failure = await this.failure(error);
      for (const [taskId, waiters] of batch) this.removeWaiters(taskId, waiters, failure);
      return;
    }
    for (const [taskId, waiters] of batch) {
      if (locked.has(taskId)) void this.markAwaited(taskId, waiters, retrying);
      else this.recheck(taskId);
    }
  }

  private worthRetrying(error: unknown, retrying: boolean): boolean {
    return !this.closed && (isSessionLost(error) || (retrying && isServerUnavailable(error)));
  }

  private reflagLater(batch: Map<string, Waiter[]>): void {
    setTimeout(() => {
      // Aborted or closed meanwhile: those are settled already.
      const pending = new Map<string, Waiter[]>();
      for (const [taskId, waiters] of batch) {
        const still = waiters.filter((waiter) => this.waiters.get(taskId)?.has(waiter));
        if (still.length > 0) pending.set(taskId, still);
      }
      if (pending.size > 0 && !this.closed) void this.flagBatch(pending, true);
    }, REFLAG_DELAY_MS).unref();
  }

  /** A task whose row another transaction holds: its flag waits its turn for the row, like a write. */
  private async markAwaited(taskId: string, waiters: Waiter[], retrying: boolean): Promise<void> {
    try {
      await this.gate.run(taskId, (lockTimeout) => this.statements.markAwaited.execute(this.db, { taskId, lockTimeout }));
      this.recheck(taskId);
    } catch (error) {
      if (this.worthRetrying(error, retrying)) return this.reflagLater(new Map([[taskId, waiters]]));
      this.removeWaiters(taskId, waiters, await this.failure(error));
    }
  }

  private removeWaiters(taskId: string, waiters: Waiter[], error: unknown): void {
    for (const waiter of waiters) this.removeWaiter(taskId, waiter, error);
  }

  /** Pending waits reject; tokens are left as they are; every timer is cleared. */
  close(): void {
    this.closed = true;
    this.unflagged.clear();
    const error = closedWhileWaiting();
    for (const [taskId, waiters] of this.waiters) for (const waiter of waiters) this.removeWaiter(taskId, waiter, error);
    this.deadlineQueue.clear();
    this.deadlines.clear();
    this.tokens.clear();
    this.updatePolling();
  }

  private isWatching(taskId: string): boolean {
    return this.waiters.has(taskId) || this.tokens.has(taskId);
  }

  private watchedIds(): string[] {
    return [...new Set([...this.waiters.keys(), ...this.tokens.keys()])];
  }

  private addWaiter(taskId: string, waiter: Waiter): void {
    const set = this.waiters.get(taskId) ?? new Set();
    set.add(waiter);
    this.waiters.set(taskId, set);
    this.updatePolling();
  }

  /** Settles a waiter with an error (abort, close, a failed read) and forgets it. */
  private removeWaiter(taskId: string, waiter: Waiter, error: unknown): void {
    const set = this.waiters.get(taskId);
    if (!set?.delete(waiter)) return;
    if (set.size === 0) this.waiters.delete(taskId);
    if (!this.isWatching(taskId)) this.clearDeadline(taskId);
    waiter.reject(error);
  }

  private resolveWaiters(taskId: string, snapshot: TaskSnapshot | null): void {
    const set = this.waiters.get(taskId);
    if (!set) return;
    this.waiters.delete(taskId);
    // Each waiter gets its own copy: one caller changing its snapshot must not change another's.
    for (const waiter of set) waiter.resolve(snapshot && cloneJson(snapshot));
  }

  private raiseToken(taskId: string, reason: 'cancelled' | 'expired'): void {
    const source = this.tokens.get(taskId);
    if (!source) return;
    // A raised token never lowers, so there is nothing left to watch for it.
    this.tokens.delete(taskId);
    source.cancel(reason);
    if (!this.isWatching(taskId)) this.clearDeadline(taskId);
  }

  private armDeadline(taskId: string, msUntilExpiry: number | null): void {
    this.clearDeadline(taskId);
    if (msUntilExpiry === null) return;
    // The delay comes from the database clock; when it fires, the database decides again.
    const deadline = Date.now() + Math.max(Math.ceil(msUntilExpiry), 1);
    this.deadlines.set(taskId, this.deadlineQueue.schedule(deadline, () => this.recheck(taskId)));
  }

  private clearDeadline(taskId: string): void {
    this.deadlines.get(taskId)?.();
    this.deadlines.delete(taskId);
  }

  /** Queues tasks for a re-read; one query per tick serves them all. */
  private recheck(...taskIds: string[]): void {
    if (this.closed) return;
    for (const id of taskIds) this.due.add(id);
    if (this.recheckScheduled || this.due.size === 0) return;
    this.recheckScheduled = true;
    setImmediate(() => {
      this.recheckScheduled = false;
      const ids = [...this.due].filter((id) => this.isWatching(id));
      this.due.clear();
      if (ids.length > 0) void this.reread(ids);
    });
  }

  private async reread(taskIds: string[]): Promise<void> {
    const read = ++this.rereads;
    let states: TaskState[];
    try {
      const waitedIds = taskIds.filter((id) => this.waiters.has(id));
      ({ rows: states } = await this.statements.states.execute(this.db, { taskIds, waitedIds }));
    } catch {
      // The database is unreachable: the poll tries again.
      for (const id of taskIds) this.unread.set(id, read);
      this.updatePolling();
      return;
    }
    for (const id of taskIds) {
      const failedRead = this.unread.get(id);
      if (failedRead !== undefined && failedRead < read) this.unread.delete(id);
    }
    const byId = new Map(states.map((state) => [state.task_id, state]));
    for (const taskId of taskIds) {
      const state = byId.get(taskId);
      if (!state) {
        // Discarded, or purged: nothing left to wait for, and a token with no task is forgotten.
        this.tokens.delete(taskId);
        this.resolveWaiters(taskId, null);
        this.clearDeadline(taskId);
        continue;
      }
      if (state.expired) {
        this.raiseToken(taskId, 'expired');
        this.resolveWaiters(taskId, null);
        this.clearDeadline(taskId);
        continue;
      }
      if (state.cancel_requested) this.raiseToken(taskId, 'cancelled');
      // A wait begun after this read started is read again once its flag is set.
      if (state.settled) this.resolveWaiters(taskId, toSnapshot({ ...state, status: state.status! }));
      if (this.isWatching(taskId)) this.armDeadline(taskId, state.ms_until_expiry);
      else this.clearDeadline(taskId);
    }
    this.updatePolling();
  }

  /**
   * Polls every watched task while notifications cannot be trusted: in poll-only mode, while the
   * listener is down, or while a watched task has not been read since its re-read failed.
   */
  private updatePolling(): void {
    for (const id of this.unread.keys()) if (!this.isWatching(id)) this.unread.delete(id);
    const needed = !this.closed && (this.waiters.size > 0 || this.tokens.size > 0) && !this.notificationsTrusted();
    if (needed && !this.pollTimer) {
      this.pollTimer = setInterval(() => {
        this.recheck(...this.watchedIds());
        // Tasks no longer watched need no poll: the last of them stops it.
        this.updatePolling();
      }, this.backstopPollMs).unref();
    } else if (!needed && this.pollTimer) {
      clearInterval(this.pollTimer);
      this.pollTimer = null;
    }
  }

  /** Not in poll-only mode, nor while the listener is down or a watched task is unread. */
  private notificationsTrusted(): boolean {
    return this.listener !== null && this.listener.isListening && this.unread.size === 0;
  }
}
