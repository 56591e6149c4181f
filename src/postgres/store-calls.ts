/**
 * How every public call of the PostgreSQL store runs, in one place: refused on a closed store
 * whatever its arguments; arguments validated first; an id this package never issues answered
 * "unknown" without a statement; a call that may wait for a task's row lock run on its turn and
 * within the lock timeout (task-gate.ts); and a failure turned into a `backend` error without
 * credentials, one that says what to do when a schema mismatch explains it (schema-version.ts).
 */
import { storeClosed, TaskStoreError } from '../contract/errors.js';
import { isIssuableTaskId } from '../contract/validation.js';
import { toBackendError } from './backend-error.js';
import { mayBeSchemaMismatch, readSchemaState, schemaMismatchError } from './schema-version.js';
import type { StoreDatabase } from './tables.js';
import type { TaskGate } from './task-gate.js';

type OnOneTask = string | { taskId: string };
const taskIdOf = (parsed: OnOneTask): string => (typeof parsed === 'string' ? parsed : parsed.taskId);

export class StoreCalls {
  /** A call made inside another (a refusal's getTask) rethrows the same failure: report it once. */
  private readonly reported = new WeakSet<TaskStoreError>();

  constructor(
    private readonly database: StoreDatabase,
    private readonly gate: TaskGate,
    private readonly connectionString: string | undefined,
    private readonly isClosed: () => boolean,
    /** Told of each `backend` failure the database caused (not a closed store), for the operator's logs. */
    private readonly onBackendError: (failure: TaskStoreError) => void,
  ) {}

  async run<T>(operation: () => Promise<T>): Promise<T> {
    if (this.isClosed()) throw storeClosed();
    try {
      return await operation();
    } catch (error) {
      throw await this.failure(error);
    }
  }

  /** A call on one task; `unknown` is its answer for an id that names no task. */
  onTask<V extends OnOneTask, T>(validated: () => V, unknown: T, operation: (parsed: V) => Promise<T>): Promise<T> {
    return this.run(async () => {
      const parsed = validated();
      return isIssuableTaskId(taskIdOf(parsed)) ? operation(parsed) : unknown;
    });
  }

  /** {@link onTask} for a call that may wait for the task's row lock. */
  onTaskWrite<V extends OnOneTask, T>(
    validated: () => V,
    unknown: T,
    operation: (parsed: V, lockTimeout: string) => Promise<T>,
  ): Promise<T> {
    return this.onTask(validated, unknown, (parsed) => this.gate.run(taskIdOf(parsed), (lockTimeout) => operation(parsed, lockTimeout)));
  }

  /** Credentials scrubbed; the driver's error is the `cause`. */
  backendError(error: unknown): TaskStoreError {
    return toBackendError(error, this.connectionString);
  }

  /**
   * The error a failed call throws. A failure a schema mismatch would explain (a missing table, a
   * constraint this version does not know) costs one more look, at the migration table.
   */
  async failure(error: unknown): Promise<TaskStoreError> {
    const failure = await this.explained(error);
    // Caused by something underneath (the driver, a lock): a closed store has no cause.
    if (failure.kind === 'backend' && failure.cause !== undefined && !this.reported.has(failure)) {
      this.reported.add(failure);
      this.onBackendError(failure);
    }
    return failure;
  }

  private async explained(error: unknown): Promise<TaskStoreError> {
    const failure = this.backendError(error);
    if (error instanceof TaskStoreError || !mayBeSchemaMismatch(error)) return failure;
    const state = await readSchemaState(this.database.db, this.database.schema).catch(() => null);
    return state && state.state !== 'current' ? schemaMismatchError(this.database.schema, state, failure) : failure;
  }
}
