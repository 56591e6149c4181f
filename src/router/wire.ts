/**
 * How store records look on the SEP-2663 wire. `tasks/get`, `notifications/tasks` and the
 * `CreateTaskResult` of `tools/call` all render a task here, so a pushed notification is exactly
 * what a poll would have returned at that moment. Every rendering is checked against the official
 * ext-tasks schemas before it leaves.
 */
import {
  CreateTaskResultV2Schema,
  DetailedTaskV2Schema,
  type CreateTaskResultV2,
  type DetailedTaskV2,
} from '@modelcontextprotocol/ext-tasks/core/v2';
import type { TaskObject, TaskStore } from '../contract/types.js';

/** A rendered task plus the store's `_meta` for it, which rides beside the task on the wire. */
export type WireTask = DetailedTaskV2 & { _meta?: Record<string, unknown> };

/** The fields every task shape shares (SEP-2663 `Task`), absent ones omitted. */
function taskFields(task: TaskObject) {
  return {
    taskId: task.taskId,
    ...(task.statusMessage !== undefined && { statusMessage: task.statusMessage }),
    createdAt: task.createdAt,
    lastUpdatedAt: task.lastUpdatedAt,
    ttlMs: task.ttlMs,
    ...(task.pollIntervalMs !== undefined && { pollIntervalMs: task.pollIntervalMs }),
  };
}

function withMeta<T extends object>(wire: T, task: TaskObject): T & { _meta?: Record<string, unknown> } {
  return task._meta === undefined ? wire : { ...wire, _meta: task._meta };
}

/** The `CreateTaskResult` a task-creating `tools/call` answers with: flat, `resultType: "task"`. */
export function createTaskResult(task: TaskObject): CreateTaskResultV2 {
  return CreateTaskResultV2Schema.parse(withMeta({ resultType: 'task', status: task.status, ...taskFields(task) }, task));
}

/** How many times a read that raced a transition is retried before answering what it has. */
const RENDER_ATTEMPTS = 3;

/**
 * The complete task as `tasks/get` returns it: status, the outstanding input requests while
 * `input_required`, the result or error once terminal. Null when the task is unknown or expired.
 *
 * Two reads make it up (the snapshot, then the outstanding requests), so a task answered between
 * them reads `input_required` with nothing outstanding; that read is retried, because every
 * outstanding request carries a key the client must see.
 */
export async function renderTask(store: TaskStore, taskId: string): Promise<WireTask | null> {
  for (let attempt = 1; ; attempt++) {
    const snapshot = await store.getTaskResult(taskId);
    if (snapshot === null) return null;
    const { task } = snapshot;
    const base = taskFields(task);
    let detailed: unknown;
    switch (task.status) {
      case 'input_required': {
        const inputRequests = await store.outstandingInputRequests(taskId);
        if (inputRequests === null) return null;
        if (Object.keys(inputRequests).length === 0 && attempt < RENDER_ATTEMPTS) continue;
        detailed = { ...base, status: task.status, inputRequests };
        break;
      }
      case 'completed':
        // The object the synchronous call would have returned, discriminator included.
        detailed = { ...base, status: task.status, result: { ...snapshot.result, resultType: 'complete' } };
        break;
      case 'failed':
        detailed = { ...base, status: task.status, error: snapshot.error };
        break;
      default:
        detailed = { ...base, status: task.status };
    }
    return withMeta(DetailedTaskV2Schema.parse(detailed), task);
  }
}
