import { randomFillSync } from 'node:crypto';

const ID_BYTES = 16;
/**
 * Ids are drawn from a buffer refilled from the OS CSPRNG, as Node's randomUUID does: one call
 * into the CSPRNG per 256 ids instead of one per id.
 */
const pool = Buffer.alloc(ID_BYTES * 256);
let offset = pool.length;

/**
 * 128 bits from the OS CSPRNG as 32 lowercase hex characters. A task id acts as a bearer token, so
 * it must be impossible to enumerate or guess.
 */
export function generateTaskId(): string {
  if (offset === pool.length) {
    randomFillSync(pool);
    offset = 0;
  }
  const id = pool.toString('hex', offset, offset + ID_BYTES);
  offset += ID_BYTES;
  return id;
}
