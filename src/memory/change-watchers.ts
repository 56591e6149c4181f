/**
 * The memory store's {@link TaskChangeFeed}: every change to a task's record (any transition, a
 * TTL change, a cancellation request, expiry, removal) reports its id to the watchers of that
 * task. Reports are coalesced per task and delivered on a microtask, after the operation that
 * caused them has returned, so a watcher that calls back into the store sees the finished change.
 */
import type { TaskWatch } from '../contract/task-changes.js';

type Listener = (taskId: string) => void;

export class ChangeWatchers {
  private readonly byTask = new Map<string, Set<Listener>>();
  private readonly pending = new Set<string>();

  watch(taskIds: readonly string[], onChange: Listener): TaskWatch {
    const ids = [...new Set(taskIds)];
    // A listener of the watch's own: two watches sharing a callback are still two watches.
    const listener: Listener = (taskId) => onChange(taskId);
    for (const taskId of ids) {
      const listeners = this.byTask.get(taskId) ?? new Set();
      listeners.add(listener);
      this.byTask.set(taskId, listeners);
    }
    return {
      close: () => {
        for (const taskId of ids) {
          const listeners = this.byTask.get(taskId);
          if (!listeners?.delete(listener)) continue;
          if (listeners.size === 0) this.byTask.delete(taskId);
        }
      },
    };
  }

  /** Reports a change to `taskId` soon, once however often it is called before then. */
  changed(taskId: string): void {
    if (!this.byTask.has(taskId) || this.pending.has(taskId)) return;
    this.pending.add(taskId);
    queueMicrotask(() => {
      this.pending.delete(taskId);
      for (const listener of [...(this.byTask.get(taskId) ?? [])]) {
        try {
          listener(taskId);
        } catch {
          // One watcher's failure must not keep the news from the others, nor reach the store.
        }
      }
    });
  }

  clear(): void {
    this.byTask.clear();
    this.pending.clear();
  }
}
