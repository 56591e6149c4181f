/**
 * Bounds what a row lock held elsewhere can cost: only the calls on that task, each for at most
 * the store's lock timeout, and at most one pool connection of this instance.
 *
 * Calls that may wait for a task's row lock run one at a time per task on this instance; the
 * others wait here, in memory, holding no connection, so one locked task cannot exhaust the pool
 * and starve every other task (and the reaper). A call's whole wait, here and then for the row
 * lock in PostgreSQL, is bounded by `lockTimeoutMs`: the statement gets what is left of it as its
 * `lock_timeout`. An uncontended call costs a map lookup and no timer.
 */
import { TaskStoreError } from '../contract/errors.js';

/** PostgreSQL's lock_not_available: a statement gave up waiting for a lock (lock_timeout). */
const LOCK_NOT_AVAILABLE = '55P03';

interface Turn {
  /** Called when the call ahead is done. */
  start(): void;
}

export class TaskGate {
  /** Per task with a call running: who waits for a turn, in order. */
  private readonly queues = new Map<string, Turn[]>();

  constructor(private readonly lockTimeoutMs: number) {}

  /**
   * Runs `operation` on its turn for `taskId`, with the lock timeout left for its statements (in
   * milliseconds, as `lock_timeout` text). A statement that gives up waiting for the row lock, or
   * a turn that does not come in time, throws a `backend` error saying the task is locked.
   */
  async run<T>(taskId: string, operation: (lockTimeout: string) => Promise<T>): Promise<T> {
    const startedAt = performance.now();
    const queue = this.queues.get(taskId);
    if (queue) await this.waitForTurn(queue);
    else this.queues.set(taskId, []);
    try {
      const left = Math.max(1, Math.floor(this.lockTimeoutMs - (performance.now() - startedAt)));
      return await operation(String(left));
    } catch (error) {
      if ((error as { code?: unknown } | null)?.code !== LOCK_NOT_AVAILABLE) throw error;
      throw this.locked('the task is locked by another database session', error);
    } finally {
      this.passTurn(taskId);
    }
  }

  private waitForTurn(queue: Turn[]): Promise<void> {
    return new Promise((resolve, reject) => {
      const turn: Turn = {
        start: () => {
          clearTimeout(timer);
          resolve();
        },
      };
      const timer = setTimeout(() => {
        queue.splice(queue.indexOf(turn), 1);
        reject(this.locked('the task is locked: an earlier call on it from this instance still holds or awaits its row'));
      }, this.lockTimeoutMs);
      queue.push(turn);
    });
  }

  private passTurn(taskId: string): void {
    const queue = this.queues.get(taskId)!;
    const next = queue.shift();
    if (next) next.start();
    else this.queues.delete(taskId);
  }

  private locked(why: string, cause?: unknown): TaskStoreError {
    return new TaskStoreError(
      'backend',
      `${why}; gave up after the store's lock timeout of ${this.lockTimeoutMs} ms (lockTimeoutMs): retry later`,
      { cause },
    );
  }
}
