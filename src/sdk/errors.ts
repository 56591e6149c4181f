/**
 * How the adapter reports failures to the SDK: `McpError`s with JSON-RPC codes, worded as the SDK's
 * own `InMemoryTaskStore` words them, so a client cannot tell the stores apart by their errors.
 */
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { TaskStoreError, type TaskStoreErrorKind } from '../contract/errors.js';

/** The JSON-RPC code each store error kind becomes. */
export const ERROR_CODES: Record<TaskStoreErrorKind, number> = {
  invalid_input: ErrorCode.InvalidParams,
  invalid_transition: ErrorCode.InvalidRequest,
  retention_limit_exceeded: ErrorCode.InvalidRequest,
  backend: ErrorCode.InternalError,
};

/**
 * A `TaskStoreError` as an `McpError` with the kind in `data`; anything else passes unchanged.
 * `backend` messages never carry credentials: the stores scrub them already.
 */
export function toMcpError(error: unknown): unknown {
  if (!(error instanceof TaskStoreError)) return error;
  return new McpError(ERROR_CODES[error.kind], error.message, { kind: error.kind });
}

export function taskNotFound(taskId: string): McpError {
  return new McpError(ErrorCode.InvalidParams, `Task with ID ${taskId} not found`);
}

export function resultAlreadyStored(taskId: string, status: string): McpError {
  return new McpError(
    ErrorCode.InvalidParams,
    `Cannot store result for task ${taskId} in terminal status '${status}'. Task results can only be stored once.`,
  );
}

export function terminalStatus(taskId: string, from: string, to: string): McpError {
  return new McpError(
    ErrorCode.InvalidParams,
    `Cannot update task ${taskId} from terminal status '${from}' to '${to}'. Terminal states (completed, failed, cancelled) cannot transition to other states.`,
  );
}

/** What tasks/result answers for a task that ended without a result (cancelled). */
export function noResultStored(taskId: string): McpError {
  return new McpError(ErrorCode.InternalError, `Task ${taskId} has no result stored`);
}

/** The SDK's tasks/list handler reports this as -32602 "Failed to list tasks: Invalid cursor: …". */
export function invalidCursor(cursor: string): Error {
  return new Error(`Invalid cursor: ${cursor}`);
}

export function isInvalidInput(error: unknown): boolean {
  return error instanceof TaskStoreError && error.kind === 'invalid_input';
}
