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

/** A value as the JSON a store keeps, and its size. */
export interface EncodedPayload {
  json: string;
  bytes: number;
}

/**
 * The value (validated plain JSON) encoded as the store keeps it, or why it cannot be kept under
 * `maxPayloadBytes`. Payloads (arguments, a result, an error, the meta, an input request, an input
 * response) and status messages are measured this way.
 *
 * A value may reach one object many times; its JSON text repeats that object every time, and can
 * be exponentially larger than the value. So a lower bound of the size is computed first, in time
 * linear in the value's distinct objects, and a value certainly too large is never serialized.
 */
export function encodePayload(what: string, value: unknown, maxPayloadBytes: number): EncodedPayload | TaskStoreError {
  const atLeast = jsonBytesAtLeast(value, new Map());
  if (atLeast > maxPayloadBytes) return payloadTooLarge(what, atLeast, maxPayloadBytes, 'at least ');
  const json = JSON.stringify(value);
  const bytes = payloadBytes(json);
  return bytes > maxPayloadBytes ? payloadTooLarge(what, bytes, maxPayloadBytes) : { json, bytes };
}

/** {@link encodePayload}, throwing `retention_limit_exceeded` for a value over the limit. */
export function checkedPayload(what: string, value: unknown, maxPayloadBytes: number): EncodedPayload {
  const encoded = encodePayload(what, value, maxPayloadBytes);
  if (encoded instanceof TaskStoreError) throw encoded;
  return encoded;
}

/**
 * Never more than `Buffer.byteLength(JSON.stringify(value))`: a string's UTF-16 units are at most
 * its UTF-8 bytes, and escapes only add. Shared objects are sized once. The value is validated JSON,
 * at most MAX_JSON_DEPTH deep, so the recursion is shallow.
 */
function jsonBytesAtLeast(value: unknown, sizes: Map<object, number>): number {
  if (typeof value === 'string') return value.length + 2;
  if (typeof value !== 'object' || value === null) return String(value).length;
  const known = sizes.get(value);
  if (known !== undefined) return known;
  const entries = Object.entries(value);
  let size = 2 + Math.max(0, entries.length - 1);
  if (Array.isArray(value)) for (const [, item] of entries) size += jsonBytesAtLeast(item, sizes);
  else for (const [key, item] of entries) size += key.length + 3 + jsonBytesAtLeast(item, sizes);
  sizes.set(value, size);
  return size;
}

export function payloadTooLarge(what: string, bytes: number, maxPayloadBytes: number, atLeast = ''): TaskStoreError {
  return new TaskStoreError(
    'retention_limit_exceeded',
    `${what} is ${atLeast}${bytes} bytes as JSON, over the store's limit of ${maxPayloadBytes} bytes`,
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
