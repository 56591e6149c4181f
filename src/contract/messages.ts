/** Status messages and fixed payloads shared by every store, matching tower-mcp's reference store. */
import type { JsonRpcError } from './types.js';

export const statusMessages = {
  created: 'Task started',
  inputRequired: 'Awaiting client input',
  resumed: 'Task resumed',
  completed: 'Task completed',
  failed: (error: JsonRpcError) => `Task failed: ${error.message}`,
  cancelled: (reason: string | null | undefined) => (reason == null ? 'Task cancelled' : `Cancelled: ${reason}`),
} as const;

/**
 * What an oversized completion or failure leaves behind: a content-free error, so nothing of the
 * rejected payload is retained, and the task still reaches a terminal state its waiters can see.
 */
export const RETENTION_FAILURE_ERROR: JsonRpcError = {
  code: -32603,
  message: 'Task result exceeded the store retention limit',
};
