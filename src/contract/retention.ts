/**
 * Retention limits as both stores measure and enforce them, and the errors they raise. Messages
 * carry sizes and limits only, never the rejected content or the owner, so they are safe to log
 * or return to a client.
 */
import { TaskStoreError } from './errors.js';

export const DEFAULT_MAX_PAYLOAD_BYTES = 4 * 1024 * 1024;

/** The size every limit is measured in: UTF-8 bytes of compact JSON (`JSON.stringify`). */
export function payloadBytes(json: string): number {
  return Buffer.byteLength(json, 'utf8');
}

/** The payload's size, or `retention_limit_exceeded` when it is over `maxPayloadBytes`. */
export function checkPayload(what: string, json: string, maxPayloadBytes: number): number {
  const bytes = payloadBytes(json);
  if (bytes > maxPayloadBytes) throw payloadTooLarge(what, bytes, maxPayloadBytes);
  return bytes;
}

/**
 * Why the outcome of `completeTask` or `failTask` cannot be kept under `maxPayloadBytes`, or null:
 * the result or error itself, or the status message a failure leaves ("Task failed: " and the
 * error's message), which is bounded like a payload.
 */
export function oversizedOutcome(
  outcome: { what: 'result'; json: string } | { what: 'error'; json: string; statusMessage: string },
  maxPayloadBytes: number,
): TaskStoreError | null {
  const bytes = payloadBytes(outcome.json);
  if (bytes > maxPayloadBytes) return payloadTooLarge(outcome.what, bytes, maxPayloadBytes);
  if (outcome.what === 'result') return null;
  const messageBytes = payloadBytes(JSON.stringify(outcome.statusMessage));
  return messageBytes > maxPayloadBytes ? payloadTooLarge('error message', messageBytes, maxPayloadBytes) : null;
}

export function payloadTooLarge(what: string, bytes: number, maxPayloadBytes: number): TaskStoreError {
  return new TaskStoreError(
    'retention_limit_exceeded',
    `${what} is ${bytes} bytes as JSON, over the store's limit of ${maxPayloadBytes} bytes`,
  );
}

export function ownerQuotaExceeded(maxTasksPerOwner: number): TaskStoreError {
  return new TaskStoreError(
    'retention_limit_exceeded',
    `the task's owner already has ${maxTasksPerOwner} unexpired tasks, its maxTasksPerOwner limit`,
  );
}

export function taskCountExceeded(maxTasks: number): TaskStoreError {
  return new TaskStoreError(
    'retention_limit_exceeded',
    `the store already retains ${maxTasks} tasks (live and expired), its maxTasks limit`,
  );
}

export function retainedBytesExceeded(wouldRetain: number, maxRetainedBytes: number): TaskStoreError {
  return new TaskStoreError(
    'retention_limit_exceeded',
    `this would bring the store's retained payloads to ${wouldRetain} bytes as JSON, over its limit of ${maxRetainedBytes} bytes`,
  );
}
