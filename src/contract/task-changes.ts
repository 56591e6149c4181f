/**
 * An optional capability beside {@link TaskStore}: hearing that a task changed, whichever instance
 * changed it. `waitForCompletion` hears only the end of a task; a router pushing status
 * notifications also needs to hear a task asking for input or being cancelled.
 *
 * A change report is a hint, never the news itself: the listener re-reads the task, because the
 * store is the truth. Reports are coalesced (several quick changes may arrive as one) and best
 * effort across instances (a report lost with a dropped connection is not replayed), so a reader
 * that must not miss an outcome still polls or waits as well.
 */
import type { TaskStore } from './types.js';

export interface TaskChangeFeed {
  /**
   * Reports, by task id, changes to any of `taskIds` made after the returned promise resolves, on
   * any instance. Every store reports at least: a task becoming `input_required`, reaching a
   * terminal status, a cancellation request (also on a task that had already finished), a TTL
   * change, the moment its TTL elapses, and a discard. Other changes (a progress message, answered
   * input, the cleanup of an expired task) may be reported too.
   *
   * Ids that name no task are watched harmlessly and never reported. An `onChange` that throws is
   * ignored: the other watchers are still told, and so is it, of later changes. Call `close()` on
   * the result to stop; closing twice is harmless, and closing the store ends every watch.
   */
  watchTasks(taskIds: readonly string[], onChange: (taskId: string) => void): Promise<TaskWatch>;
}

export interface TaskWatch {
  close(): void;
}

/** Whether `store` offers {@link TaskChangeFeed}. */
export function hasTaskChangeFeed(store: TaskStore): store is TaskStore & TaskChangeFeed {
  return typeof (store as Partial<TaskChangeFeed>).watchTasks === 'function';
}
