/**
 * What the NOTIFY trigger (migrations 0001_tasks.sql and 0003_announce_resumed_tasks.sql) announces: `<event>:<task id>`. An event is
 * a hint that the task changed in a way an instance may care about; receivers re-read the row.
 */
type TaskEventKind =
  /** cancelTask was called (also on a finished task): its token must be raised. */
  | 'cancelled'
  /** The deadline moved (setTtl). */
  | 'ttl'
  /** A task a waiter or watcher flagged changed status: input_required, working again, or settled. */
  | 'status'
  /** The row is gone: discarded, or tombstoned by the reaper. */
  | 'deleted';

export interface TaskEvent {
  kind: TaskEventKind;
  taskId: string;
}

const KINDS = new Set<string>(['cancelled', 'ttl', 'status', 'deleted']);

/** The event in a notification's payload, or null for anything the trigger does not send. */
export function parseTaskEvent(payload: string): TaskEvent | null {
  const colon = payload.indexOf(':');
  const kind = payload.slice(0, colon);
  if (colon < 0 || !KINDS.has(kind)) return null;
  return { kind: kind as TaskEventKind, taskId: payload.slice(colon + 1) };
}
