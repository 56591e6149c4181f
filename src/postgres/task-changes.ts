/**
 * The PostgreSQL store's {@link TaskChangeFeed}, driven by the same NOTIFY trigger as waiters and
 * tokens: any instance's transition of a watched task reaches this instance's listener, and the
 * watcher of that task hears its id. Nothing is polled per watcher.
 *
 * The trigger announces cancellation, TTL changes and the deletion of a task before its deadline,
 * but status changes only for rows flagged `awaited` (NOTIFY costs a database-wide lock at
 * commit, so unwatched tasks stay silent). Watching a task therefore flags it first, and the watch
 * is armed once that has committed. Expiry is announced by no one: each watched task's deadline,
 * read from the database clock, is a timer here, re-read whenever its TTL changes. While the
 * listener is down (or in poll-only mode) this instance reports its own changes itself, and every
 * watched task is reported each poll interval and once more on reconnection, since announcements
 * made meanwhile are lost; reports are hints, and the watcher re-reads the task either way.
 */
import type { Kysely } from 'kysely';
import type { TaskWatch } from '../contract/task-changes.js';
import { DeadlineQueue, type CancelDeadline } from '../contract/timers.js';
import type { NotificationListener } from './listener.js';
import type { TaskGate } from './task-gate.js';
import type { TaskDatabase } from './tables.js';
import { parseTaskEvent } from './task-events.js';
import type { TaskStatements } from './task-statements.js';

type Listener = (taskId: string) => void;

export class PostgresTaskChanges {
  private readonly byTask = new Map<string, Set<Listener>>();
  private readonly due = new Set<string>();
  private readonly deadlines = new Map<string, CancelDeadline>();
  private readonly deadlineQueue = new DeadlineQueue();
  private flushScheduled = false;
  private pollTimer: NodeJS.Timeout | null = null;
  /** Watched tasks whose deadline could not be read, read again together by one timer. */
  private readonly unarmed = new Set<string>();
  private rearmTimer: NodeJS.Timeout | null = null;
  private closed = false;
  private readonly db: Kysely<TaskDatabase>;
  private readonly statements: TaskStatements;
  private readonly listener: NotificationListener | null;
  private readonly gate: TaskGate;
  private readonly backstopPollMs: number;

  constructor(options: {
    db: Kysely<TaskDatabase>;
    statements: TaskStatements;
    listener: NotificationListener | null;
    /** Flagging a task awaited is an UPDATE: it waits its turn for the row like every write. */
    gate: TaskGate;
    /** How often every watched task is reported while notifications cannot be relied on. */
    backstopPollMs: number;
  }) {
    this.db = options.db;
    this.statements = options.statements;
    this.listener = options.listener;
    this.gate = options.gate;
    this.backstopPollMs = options.backstopPollMs;
    this.listener?.onNotification((payload) => {
      const event = parseTaskEvent(payload);
      if (!event) return;
      this.report(event.taskId);
      if (event.kind === 'ttl' && this.byTask.has(event.taskId)) this.rearm([event.taskId]);
    });
    this.listener?.onStateChange(({ state }) => {
      if (state === 'listening') {
        this.report(...this.byTask.keys());
        this.rearm([...this.byTask.keys()]); // a TTL may have changed meanwhile
      }
      this.updatePolling();
    });
  }

  /** Flags the open ones among `taskIds` as awaited, then reports their changes to `onChange`. */
  async watch(taskIds: readonly string[], onChange: Listener): Promise<TaskWatch> {
    const ids = [...new Set(taskIds)];
    // A listener of the watch's own: two watches sharing a callback are still two watches.
    const listener: Listener = (taskId) => onChange(taskId);
    for (const taskId of ids) {
      const listeners = this.byTask.get(taskId) ?? new Set();
      listeners.add(listener);
      this.byTask.set(taskId, listeners);
    }
    const watch = { close: () => this.unwatch(ids, listener) };
    try {
      await Promise.all(
        ids.map((taskId) =>
          this.gate.run(taskId, (lockTimeout) => this.statements.markAwaited.execute(this.db, { taskId, lockTimeout })),
        ),
      );
      await this.armDeadlines(ids);
    } catch (error) {
      watch.close();
      throw error;
    }
    this.updatePolling();
    return watch;
  }

  /**
   * This instance changed the task. Its NOTIFY reports it, unless the listener is down or there is
   * none (poll-only mode): then this does, rather than the next poll.
   */
  changedHere(taskId: string, change: { deadlineMoved?: boolean } = {}): void {
    if (this.listening()) return;
    this.report(taskId);
    if (change.deadlineMoved && this.byTask.has(taskId)) this.rearm([taskId]);
  }

  close(): void {
    this.closed = true;
    this.byTask.clear();
    this.due.clear();
    this.deadlineQueue.clear();
    this.deadlines.clear();
    this.unarmed.clear();
    if (this.rearmTimer) clearTimeout(this.rearmTimer);
    this.rearmTimer = null;
    this.updatePolling();
  }

  /**
   * {@link armDeadlines} in the background, read again every `backstopPollMs` while the read fails:
   * a deadline that moved while the listener was away must not stay the old one until it passes.
   */
  private rearm(taskIds: string[]): void {
    this.armDeadlines(taskIds).catch(() => {
      for (const taskId of taskIds) this.unarmed.add(taskId);
      this.rearmTimer ??= setTimeout(() => {
        this.rearmTimer = null;
        const watched = [...this.unarmed].filter((taskId) => this.byTask.has(taskId));
        this.unarmed.clear();
        if (!this.closed && watched.length > 0) this.rearm(watched);
      }, this.backstopPollMs).unref();
    });
  }

  /** Reads the time left of the watched ones among `taskIds`, to report each when it runs out. */
  private async armDeadlines(taskIds: string[]): Promise<void> {
    if (taskIds.length === 0) return;
    const { rows } = await this.statements.states.execute(this.db, { taskIds, waitedIds: [] });
    for (const { task_id: taskId, ms_until_expiry: msLeft, expired } of rows) {
      if (!this.byTask.has(taskId) || expired) continue;
      this.deadlines.get(taskId)?.();
      this.deadlines.delete(taskId);
      if (msLeft === null) continue;
      const fire = () => {
        this.deadlines.delete(taskId);
        this.report(taskId);
      };
      this.deadlines.set(taskId, this.deadlineQueue.schedule(Date.now() + Math.max(Math.ceil(msLeft), 1), fire));
    }
  }

  private unwatch(ids: string[], listener: Listener): void {
    for (const taskId of ids) {
      const listeners = this.byTask.get(taskId);
      if (!listeners?.delete(listener)) continue;
      if (listeners.size > 0) continue;
      this.byTask.delete(taskId);
      this.deadlines.get(taskId)?.();
      this.deadlines.delete(taskId);
    }
    this.updatePolling();
  }

  /** Queues reports for watched ids; one tick delivers them, once per id however often queued. */
  private report(...taskIds: string[]): void {
    if (this.closed) return;
    for (const taskId of taskIds) if (this.byTask.has(taskId)) this.due.add(taskId);
    if (this.flushScheduled || this.due.size === 0) return;
    this.flushScheduled = true;
    setImmediate(() => {
      this.flushScheduled = false;
      const ids = [...this.due];
      this.due.clear();
      for (const taskId of ids) {
        for (const listener of [...(this.byTask.get(taskId) ?? [])]) {
          try {
            listener(taskId);
          } catch {
            // One watcher's failure must not keep the news from the others.
          }
        }
      }
    });
  }

  private updatePolling(): void {
    const needed = !this.closed && this.byTask.size > 0 && !this.listening();
    if (needed && !this.pollTimer) {
      this.pollTimer = setInterval(() => this.report(...this.byTask.keys()), this.backstopPollMs).unref();
    } else if (!needed && this.pollTimer) {
      clearInterval(this.pollTimer);
      this.pollTimer = null;
    }
  }

  private listening(): boolean {
    return this.listener !== null && this.listener.isListening;
  }
}
