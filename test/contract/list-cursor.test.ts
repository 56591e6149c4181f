import { describe, expect, it } from 'vitest';
import { TaskStoreError } from '../../src/contract/errors.js';
import { comparePositions, decodeCursor, encodeCursor, type ListPosition } from '../../src/contract/listing.js';

const ID = '0123456789abcdef0123456789abcdef';
const OTHER_ID = 'fedcba9876543210fedcba9876543210';
const MESSAGE = 'invalid options.cursor: not a cursor this store issued';

/** A cursor-shaped string whose decoded text is exactly `text`. */
const raw = (text: string) => Buffer.from(text, 'utf8').toString('base64url');

function expectRefused(cursor: string): void {
  let thrown: unknown;
  try {
    decodeCursor(cursor);
  } catch (error) {
    thrown = error;
  }
  expect(thrown).toBeInstanceOf(TaskStoreError);
  expect((thrown as TaskStoreError).kind).toBe('invalid_input');
  expect((thrown as TaskStoreError).message).toBe(MESSAGE);
}

describe('list cursors', () => {
  it.each([0, 1, 1_700_000_000_123, Number.MAX_SAFE_INTEGER])('round-trip a position created at %d', (createdAtMs) => {
    const position = { createdAtMs, taskId: ID };
    const cursor = encodeCursor(position);
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/); // URL- and JSON-safe as it is
    expect(decodeCursor(cursor)).toEqual(position);
  });

  it('tells different positions apart', () => {
    expect(encodeCursor({ createdAtMs: 5, taskId: ID })).not.toBe(encodeCursor({ createdAtMs: 5, taskId: OTHER_ID }));
    expect(decodeCursor(encodeCursor({ createdAtMs: 6, taskId: OTHER_ID }))).toEqual({ createdAtMs: 6, taskId: OTHER_ID });
  });

  it('refuses text with junk before or after a valid cursor', () => {
    expectRefused(raw(`x5.${ID}`));
    expectRefused(raw(` 5.${ID}`));
    expectRefused(raw(`5.${ID}x`));
    expectRefused(raw(`5.${ID}\n`));
    expectRefused(raw(`5.${ID}0`)); // a 33-digit id
    expectRefused(raw(`5.${ID}.5.${ID}`));
  });

  it('refuses cursors whose decoded text is only almost right', () => {
    expectRefused('');
    expectRefused(raw(`.${ID}`)); // no time
    expectRefused(raw(`-5.${ID}`));
    expectRefused(raw(`5.5.${ID}`));
    expectRefused(raw(`05.${ID}`)); // not how encodeCursor writes 5
    expectRefused(raw(`5.${ID.slice(1)}`)); // 31 hex digits
    expectRefused(raw(`5.${ID.toUpperCase()}`));
    expectRefused(raw(`5.${ID.replace('a', 'g')}`));
    expectRefused(raw(`5:${ID}`));
  });

  // 2^53 is a 16-digit number JavaScript represents exactly, so it would round-trip;
  // it is refused because it is not a safe integer (later times could not be told apart).
  it('refuses a time that is not a safe integer', () => {
    expectRefused(raw(`${2 ** 53}.${ID}`));
    expectRefused(raw(`9007199254740994.${ID}`));
    expectRefused(raw(`12345678901234567.${ID}`)); // 17 digits
  });

  // Node's base64url decoder skips characters it does not know; such a cursor was not issued.
  it('refuses a valid cursor with characters the decoder would skip', () => {
    const cursor = encodeCursor({ createdAtMs: 42, taskId: ID });
    expectRefused(`${cursor}!`);
    expectRefused(`*${cursor}`);
    expectRefused(`${cursor.slice(0, 4)}.${cursor.slice(4)}`);
    expectRefused(`${cursor}==`);
  });
});

describe('comparePositions', () => {
  const at = (createdAtMs: number, taskId: string): ListPosition => ({ createdAtMs, taskId });

  it('is 0 for the same position', () => {
    expect(comparePositions(at(7, ID), at(7, ID))).toBe(0);
  });

  it('orders by creation time first, whatever the ids', () => {
    expect(comparePositions(at(1, OTHER_ID), at(2, ID))).toBeLessThan(0);
    expect(comparePositions(at(2, ID), at(1, OTHER_ID))).toBeGreaterThan(0);
  });

  it('orders by task id when created at the same time', () => {
    expect(comparePositions(at(3, ID), at(3, OTHER_ID))).toBeLessThan(0);
    expect(comparePositions(at(3, OTHER_ID), at(3, ID))).toBeGreaterThan(0);
  });

  it('sorts positions into listing order', () => {
    const positions = [at(2, ID), at(1, OTHER_ID), at(2, OTHER_ID), at(1, ID), at(0, OTHER_ID)];
    expect(positions.sort(comparePositions)).toEqual([at(0, OTHER_ID), at(1, ID), at(1, OTHER_ID), at(2, ID), at(2, OTHER_ID)]);
  });
});
