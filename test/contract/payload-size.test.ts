import { describe, expect, it } from 'vitest';
import { TaskStoreError } from '../../src/contract/errors.js';
import {
  checkedPayload,
  encodePayload,
  ownerQuotaExceeded,
  payloadBytes,
  payloadTooLarge,
  retainedBytesExceeded,
  taskCountExceeded,
} from '../../src/contract/retention.js';

const tooLarge = (what: string, bytes: number, max: number, atLeast = '') =>
  `${what} is ${atLeast}${bytes} bytes as JSON, over the store's limit of ${max} bytes`;

/** The refusal `encodePayload` returns, checked to be one. */
function refusal(what: string, value: unknown, max: number): TaskStoreError {
  const result = encodePayload(what, value, max);
  expect(result).toBeInstanceOf(TaskStoreError);
  const error = result as TaskStoreError;
  expect(error.kind).toBe('retention_limit_exceeded');
  return error;
}

describe('encodePayload', () => {
  it('returns the compact JSON and its UTF-8 size for a value that fits', () => {
    expect(encodePayload('result', { a: 'é', b: [1, null] }, 100)).toEqual({ json: '{"a":"é","b":[1,null]}', bytes: 23 });
    expect(payloadBytes('"é"')).toBe(4);
  });

  it('accepts a value of exactly the limit and refuses one byte more', () => {
    expect(encodePayload('result', 'abc', 5)).toEqual({ json: '"abc"', bytes: 5 });
    expect(refusal('result', 'abc', 4).message).toBe(tooLarge('result', 5, 4, 'at least '));
    // Exact size over the limit while the lower bound fits: 'é' is 1 UTF-16 unit, 2 bytes.
    expect(encodePayload('result', 'é', 4)).toEqual({ json: '"é"', bytes: 4 });
    expect(refusal('result', 'é', 3).message).toBe(tooLarge('result', 4, 3));
  });

  // For ASCII without escapes the lower bound is the exact size, so N is known in advance.
  it.each([
    ['a string of length L: L + 2', 'abcd', 6],
    ['an empty string', '', 2],
    ['a number', 12345, 5],
    ['a negative fraction', -1.5, 4],
    ['true', true, 4],
    ['false', false, 5],
    ['null', null, 4],
    ['an empty array', [], 2],
    ['an empty object', {}, 2],
    ['[a, b]: 2 + 1 comma + parts', [1, 'ab'], 8],
    ['[a, b, c]: 2 + 2 commas + parts', [true, null, 7], 13],
    ['{k: v}: 2 + key + 3 + v', { ab: true }, 11],
    ['two members: one comma', { a: 1, b: null }, 16],
    ['nested', { a: [1, 2], b: { c: 'x' } }, 25],
  ])('says "at least N" for %s over the limit', (_, value, size) => {
    expect(JSON.stringify(value).length).toBe(size); // the test's own arithmetic
    expect(refusal('arguments', value, size - 1).message).toBe(tooLarge('arguments', size, size - 1, 'at least '));
    expect(encodePayload('arguments', value, size)).toEqual({ json: JSON.stringify(value), bytes: size });
  });

  it('gives the exact size, without "at least", when only escapes or multi-byte characters push it over', () => {
    // Lower bound 5 ('a"b' + quotes); exact '"a\"b"' is 6.
    expect(refusal('the meta', 'a"b', 5).message).toBe(tooLarge('the meta', 6, 5));
    // Lower bound 2 + 1 + 3 + 3 = 9; exact {"k":"€"} is 11 (€ is 3 bytes).
    expect(refusal('an input response', { k: '€' }, 9).message).toBe(tooLarge('an input response', 11, 9));
    // The same values certainly too large get the lower bound.
    expect(refusal('the meta', 'a"b', 4).message).toBe(tooLarge('the meta', 5, 4, 'at least '));
    expect(refusal('an input response', { k: '€' }, 8).message).toBe(tooLarge('an input response', 9, 8, 'at least '));
  });

  // A value reaching one object 2^40 times has JSON far too large to build; it must be refused
  // from its lower bound, which sizes each distinct object once (and counts every reference).
  it('refuses quickly a value whose JSON is exponentially large, with its lower bound', { timeout: 5_000 }, () => {
    const leaf = { s: 'x'.repeat(10) }; // {"s":"xxxxxxxxxx"}: 18
    let value: unknown = leaf;
    let size = 18;
    for (let level = 0; level < 40; level++) {
      value = [value, value];
      size = 2 + 1 + 2 * size;
    }
    expect(refusal('arguments', value, 1_000_000).message).toBe(tooLarge('arguments', size, 1_000_000, 'at least '));
  });

  it('sizes a shared object at every place it appears', () => {
    const shared = { a: 1 }; // 7
    const value = [shared, shared, shared]; // 2 + 2 + 21 = 25
    expect(encodePayload('result', value, 25)).toEqual({ json: JSON.stringify(value), bytes: 25 });
    expect(refusal('result', value, 24).message).toBe(tooLarge('result', 25, 24, 'at least '));
  });
});

describe('checkedPayload', () => {
  it('returns what fits and throws the refusal for what does not', () => {
    expect(checkedPayload('result', [1], 3)).toEqual({ json: '[1]', bytes: 3 });
    expect(() => checkedPayload('result', [1], 2)).toThrow(tooLarge('result', 3, 2, 'at least '));
  });
});

describe('retention limit errors', () => {
  it.each([
    [payloadTooLarge('a status message', 12, 10), tooLarge('a status message', 12, 10)],
    [payloadTooLarge('result', 12, 10, 'at least '), tooLarge('result', 12, 10, 'at least ')],
    [ownerQuotaExceeded(3), "the task's owner already has 3 unexpired tasks, its maxTasksPerOwner limit"],
    [taskCountExceeded(10), 'the store already retains 10 tasks (live and expired), its maxTasks limit'],
    [
      retainedBytesExceeded(120, 100),
      "this would bring the store's retained payloads to 120 bytes as JSON, over its limit of 100 bytes",
    ],
  ])('%# says exactly what limit was hit', (error, message) => {
    expect(error).toBeInstanceOf(TaskStoreError);
    expect(error.kind).toBe('retention_limit_exceeded');
    expect(error.message).toBe(message);
  });
});
