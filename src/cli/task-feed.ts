/**
 * The changes `watch` shows, found two ways. The store's NOTIFY names the tasks whose
 * cancellation, ttl or deletion changed, and the status changes of awaited tasks: those are
 * re-read at once. Everything else (a task created, a progress message, a status nobody awaits)
 * only a re-read finds, so every `intervalMs` the rows updated since the last one are read again.
 * Each read compares what it finds with what was shown, so a change reported both ways shows once.
 *
 * A re-read looks back OVERLAP_US before the previous one: a transaction stamps last_updated_at
 * when it starts and may commit a little later. A task that changes twice between two reads
 * shows its latest state only; its history has every transition (`mcp-task-store show`).
 */
import type { TaskStatus } from '../contract/types.js';
import type { CliDatabase } from './database.js';
import { databaseNowUs, readChangedTasks, tombstonedAmong, type WatchedTask } from './operator-queries.js';

const OVERLAP_US = 5_000_000n;
/** How many tasks the feed remembers beyond the overlap window, for the statuses it shows them going from. */
const REMEMBERED_TASKS = 10_000;

export interface TaskChange {
  /** When the task changed (its last_updated_at) or expired, or when its removal was seen. */
  at: Date;
  /** created: first seen since watch started; expired: past its expiry, or tombstoned; deleted: discarded. */
  change: 'created' | 'updated' | 'expired' | 'deleted';
  taskId: string;
  /** null once the task is gone. */
  status: TaskStatus | null;
  /** The status this watch last showed for the task; null when it had not seen it. */
  previousStatus: TaskStatus | null;
  toolName: string | null;
  owner: string | null;
  statusMessage: string | null;
  cancelRequestedAt: Date | null;
}

interface Seen {
  fingerprint: string;
  updatedUs: bigint;
  status: TaskStatus;
  toolName: string;
  owner: string | null;
  expired: boolean;
}

export class TaskFeed {
  private readonly seen = new Map<string, Seen>();
  private readonly notified = new Set<string>();
  private startUs = 0n;
  private afterUs = 0n;

  constructor(
    private readonly database: CliDatabase,
    private readonly emit: (change: TaskChange) => void,
  ) {}

  /** Marks the start: changes from before it are not shown. */
  async start(): Promise<void> {
    this.startUs = BigInt(await databaseNowUs(this.database));
    this.afterUs = this.startUs - OVERLAP_US;
  }

  /** A NOTIFY payload, "<event>:<task_id>": the task is read again on the next {@link read}. */
  notify(payload: string): void {
    this.notified.add(payload.slice(payload.indexOf(':') + 1));
  }

  /** Reads what changed since the last read, and the notified tasks; emits each change once. */
  async read(): Promise<void> {
    const ids = [...this.notified];
    this.notified.clear();
    try {
      const { tasks, nowUs } = await readChangedTasks(this.database, String(this.afterUs), ids);
      for (const task of tasks) this.observe(task, ids.includes(task.taskId));
      const present = new Set(tasks.map((task) => task.taskId));
      const gone = ids.filter((id) => !present.has(id));
      if (gone.length > 0) {
        const tombstoned = await tombstonedAmong(this.database, gone);
        for (const id of gone) this.removed(id, tombstoned.has(id));
      }
      this.afterUs = BigInt(nowUs) - OVERLAP_US;
      this.forgetOld();
    } catch (error) {
      for (const id of ids) this.notified.add(id); // read again next time
      throw error;
    }
  }

  private observe(task: WatchedTask, notified: boolean): void {
    const before = this.seen.get(task.taskId);
    const updatedUs = BigInt(task.updatedUs);
    const fingerprint = [task.status, task.statusMessage, task.updatedUs, task.cancelRequestedAt?.getTime(), task.expiresAt?.getTime(), task.expired].join('|');
    if (before?.fingerprint === fingerprint) return;
    this.remember(task.taskId, { fingerprint, updatedUs, status: task.status, toolName: task.toolName, owner: task.owner, expired: task.expired });
    // Rows as they were when watch started are its baseline, not changes; a notification, or an
    // expiry since the start, is news.
    const expiredSinceStart = task.expired && BigInt(task.expiresAt!.getTime()) * 1000n > this.startUs;
    if (!before && updatedUs <= this.startUs && !notified && !expiredSinceStart) return;
    if (before?.expired && task.expired) return;
    const createdBeforeStart = BigInt(task.createdAt.getTime()) * 1000n <= this.startUs;
    const change = task.expired ? 'expired' : before || createdBeforeStart ? 'updated' : 'created';
    this.emit({
      at: change === 'expired' ? task.expiresAt! : task.lastUpdatedAt,
      change,
      taskId: task.taskId,
      status: task.status,
      previousStatus: before?.status ?? null,
      toolName: task.toolName,
      owner: task.owner,
      statusMessage: task.statusMessage,
      cancelRequestedAt: task.cancelRequestedAt,
    });
  }

  private removed(taskId: string, tombstoned: boolean): void {
    const before = this.seen.get(taskId);
    this.seen.delete(taskId);
    if (tombstoned && before?.expired) return; // shown as expired already
    this.emit({
      at: new Date(),
      change: tombstoned ? 'expired' : 'deleted',
      taskId,
      status: null,
      previousStatus: before?.status ?? null,
      toolName: before?.toolName ?? null,
      owner: before?.owner ?? null,
      statusMessage: null,
      cancelRequestedAt: null,
    });
  }

  /** Most recently changed last, so the oldest are forgotten first. */
  private remember(taskId: string, seen: Seen): void {
    this.seen.delete(taskId);
    this.seen.set(taskId, seen);
  }

  /** Past the limit, forget tasks that last changed before the overlap window (they cannot show twice). */
  private forgetOld(): void {
    for (const [taskId, seen] of this.seen) {
      if (this.seen.size <= REMEMBERED_TASKS) return;
      if (seen.updatedUs < this.afterUs) this.seen.delete(taskId);
    }
  }
}
