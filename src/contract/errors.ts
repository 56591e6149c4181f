export type TaskStoreErrorKind =
  /** Deterministic: retrying cannot help (a spent key reused, `setStatus` to a terminal status). */
  | 'invalid_transition'
  | 'retention_limit_exceeded'
  /** A value failed validation; nothing was changed. */
  | 'invalid_input'
  /** The database failed. The message never carries credentials; the driver's error is `cause`. */
  | 'backend';

/** The one error class every store throws. Switch on `kind`, not on the message. */
export class TaskStoreError extends Error {
  readonly kind: TaskStoreErrorKind;

  constructor(kind: TaskStoreErrorKind, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'TaskStoreError';
    this.kind = kind;
  }
}

// The errors both stores raise for the same reason, with the same message. (Retention limits have
// theirs in retention.ts, input requests in input-requests.ts.)

/**
 * `where` names the value, e.g. `requests.approval.method`; `cause` is the caller's own error when
 * reading the value threw.
 */
export function invalidInput(where: string, problem: string, cause?: unknown): TaskStoreError {
  return new TaskStoreError('invalid_input', `invalid ${where}: ${problem}`, cause === undefined ? undefined : { cause });
}

/** The problem of a value whose reading ran the caller's code, which threw. */
export function readingThrew(error: unknown): string {
  return `reading it threw: ${error instanceof Error ? error.message : String(error)}`;
}

/** Every call on a closed store, whatever its arguments. */
export function storeClosed(): TaskStoreError {
  return new TaskStoreError('backend', 'the task store is closed');
}

/** A `waitForCompletion` still pending when the store closed. */
export function closedWhileWaiting(): TaskStoreError {
  return new TaskStoreError('backend', 'the task store was closed while waiting for the task');
}

export function terminalStatusRefused(status: string): TaskStoreError {
  return new TaskStoreError(
    'invalid_transition',
    `setStatus is for non-terminal progress; use completeTask, failTask or cancelTask to reach '${status}'`,
  );
}
