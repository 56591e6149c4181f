/** Status messages and fixed payloads shared by every store, matching tower-mcp's reference store. */
import type { JsonRpcError } from './types.js';

export const statusMessages = {
  created: 'Task started',
  inputRequired: 'Awaiting client input',
  resumed: 'Task resumed',
  completed: 'Task completed',
  failed: (error: JsonRpcError) => `Task failed: ${error.message}`,
  cancelled: (reason: string | null | undefined) => (reason == null ? 'Task cancelled' : `Cancelled: ${reason}`),
  /** The status of a task ended with {@link RETENTION_FAILURE_ERROR} (tower-mcp's RETENTION_FAILURE_STATUS). */
  retentionFailed: 'Task failed: retention limit exceeded',
  /** A cancel whose reason is over the payload limit records this instead of the reason. */
  cancelledOverLimit: 'Task cancelled: retention limit exceeded',
} as const;

/**
 * What an oversized completion or failure leaves behind: a content-free error, so nothing of the
 * rejected payload is retained, and the task still reaches a terminal state its waiters can see.
 */
export const RETENTION_FAILURE_ERROR: JsonRpcError = {
  code: -32603,
  message: 'Task payload exceeded configured retention limits',
};
