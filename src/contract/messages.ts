/** Status messages and fixed payloads shared by every store, matching tower-mcp's reference store. */
import { payloadBytes } from './retention.js';
import type { JsonRpcError } from './types.js';

export const statusMessages = {
  created: 'Task started',
  inputRequired: 'Awaiting client input',
  resumed: 'Task resumed',
  completed: 'Task completed',
  failed: (error: JsonRpcError) => `Task failed: ${error.message}`,
  /** The status of a task ended with {@link RETENTION_FAILURE_ERROR} (tower-mcp's RETENTION_FAILURE_STATUS). */
  retentionFailed: 'Task failed: retention limit exceeded',
  /**
   * Limits never stop a cancellation: a reason whose message would be over `maxPayloadBytes` is
   * replaced by a fixed message rather than refused.
   */
  cancelled(reason: string | null | undefined, maxPayloadBytes: number): string {
    if (reason == null) return 'Task cancelled';
    const message = `Cancelled: ${reason}`;
    return payloadBytes(JSON.stringify(message)) <= maxPayloadBytes ? message : 'Task cancelled: retention limit exceeded';
  },
} as const;

/**
 * What an oversized completion or failure leaves behind: a content-free error, so nothing of the
 * rejected payload is retained, and the task still reaches a terminal state its waiters can see.
 */
export const RETENTION_FAILURE_ERROR: JsonRpcError = {
  code: -32603,
  message: 'Task payload exceeded configured retention limits',
};
