import { TaskStoreError } from './errors.js';
import type { RetentionLimits } from './types.js';

export const DEFAULT_MAX_PAYLOAD_BYTES = 4 * 1024 * 1024;

/** The size every limit is measured in: UTF-8 bytes of compact JSON. */
export function payloadBytes(json: string): number {
  return Buffer.byteLength(json, 'utf8');
}

/** Validates the user's limits: each must be a positive safe integer when given. */
export function checkLimits(limits: RetentionLimits | undefined): void {
  for (const [name, value] of Object.entries(limits ?? {})) {
    if (value !== undefined && !(Number.isSafeInteger(value) && value > 0)) {
      throw new TaskStoreError('invalid_input', `invalid limits.${name}: must be a positive integer`);
    }
  }
}

export function payloadTooLarge(what: string, bytes: number, max: number): TaskStoreError {
  return new TaskStoreError(
    'retention_limit_exceeded',
    `${what} is ${bytes} bytes as JSON, over the store's limit of ${max} bytes`,
  );
}
