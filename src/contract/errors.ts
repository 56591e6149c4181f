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
