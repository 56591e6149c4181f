import { randomBytes } from 'node:crypto';

/**
 * 128 bits from the OS CSPRNG as 32 lowercase hex characters. A task id acts as a bearer token, so
 * it must be impossible to enumerate or guess.
 */
export function generateTaskId(): string {
  return randomBytes(16).toString('hex');
}
