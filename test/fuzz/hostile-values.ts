/**
 * fast-check arbitraries for hostile input: the values a careless or malicious caller (or untyped
 * JavaScript) can hand the store. Every method and option of both stores is fuzzed with these,
 * mixed with valid values so that a call gets past its first argument often enough.
 */
import fc from 'fast-check';

/** Over the default 4 MiB payload limit once serialised. */
export const HUGE_STRING = 'x'.repeat(5 * 1024 * 1024);

/** `[[[…]]]` nested `depth` levels deep, built without recursion. */
export function nestedArrays(depth: number): unknown {
  let value: unknown[] = [0];
  for (let i = 1; i < depth; i++) value = [value];
  return describedAs(value, `[…${depth} nested arrays…]`);
}

/** `{"a":{"a":…}}` nested `depth` levels deep. */
export function nestedObjects(depth: number): unknown {
  let value: object = { a: 'leaf' };
  for (let i = 1; i < depth; i++) value = { a: value };
  return describedAs(value, `{…${depth} nested objects…}`);
}

/**
 * Gives a value the text fast-check prints for it in a counterexample (its own printer recurses,
 * and overflows the stack on deep values). The property is a non-enumerable symbol, invisible to
 * the stores and to JSON.
 */
function describedAs<T extends object>(value: T, text: string): T {
  Object.defineProperty(value, fc.toStringMethod, { value: () => text, enumerable: false });
  return value;
}

/** Depths around every limit a store or JSON.stringify might have, up to far past any of them. */
export const DEPTHS = [16, 64, 100, 500, 1_000, 2_200, 4_000, 10_000, 100_000];

export const deepJson: fc.Arbitrary<unknown> = fc
  .tuple(fc.constantFrom(...DEPTHS), fc.boolean())
  .map(([depth, objects]) => (objects ? nestedObjects(depth) : nestedArrays(depth)));

/** Strings that are not well-formed UTF-16: lone or reversed surrogates. */
export const ILL_FORMED_STRINGS = ['\ud800', '\udfff', 'a\ud800b', 'x\udbff', '\ude00\ud83d', '\ud83d'.repeat(3)];

/** Well-formed but awkward. */
export const AWKWARD_STRINGS = [
  '',
  ' ',
  '\t\n\r',
  '\u{1F600}',
  '\u{10FFFF}',
  'e\u0301',
  '\ufeff',
  '\ufffd',
  '\u2028',
  'null',
  'undefined',
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'x'.repeat(1024),
  'x'.repeat(1025),
  'ü'.repeat(16_384),
  'x'.repeat(16_385),
];

export const NUL_STRINGS = ['\u0000', 'a\u0000b', 'ends with NUL\u0000'];

export const SQL_FRAGMENTS = [
  "'; DROP TABLE tasks; --",
  "' OR '1'='1",
  '"; DROP SCHEMA public CASCADE; --',
  '$1',
  '$$ SELECT 1 $$',
  '\\',
  "E'\\x00'",
  '%',
  '_',
  '::jsonb',
  '*/ SELECT pg_sleep(10) /*',
  'pg_catalog',
];

export const hostileString: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(...ILL_FORMED_STRINGS, ...AWKWARD_STRINGS, ...NUL_STRINGS, ...SQL_FRAGMENTS),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ unit: fc.integer({ min: 0xd800, max: 0xdfff }).map((unit) => String.fromCharCode(unit)), minLength: 1, maxLength: 4 }),
  fc.string({ unit: 'binary-ascii', maxLength: 40 }),
);

export const hostileNumber: fc.Arbitrary<number> = fc.oneof(
  fc.constantFrom(
    Number.NaN,
    Number.POSITIVE_INFINITY,
    Number.NEGATIVE_INFINITY,
    -0,
    -1,
    -0.5,
    0.5,
    1.5,
    2 ** 31,
    2 ** 31 - 1,
    2 ** 53,
    2 ** 53 + 2,
    Number.MAX_SAFE_INTEGER,
    Number.MIN_SAFE_INTEGER,
    Number.MAX_VALUE,
    Number.MIN_VALUE,
    1e21,
    // One past the 1000-year TTL cap, and the cap itself.
    1000 * 365.25 * 24 * 60 * 60 * 1000 + 1,
    1000 * 365.25 * 24 * 60 * 60 * 1000,
  ),
  fc.double(),
  fc.integer(),
);

function circular(): unknown {
  const value: Record<string, unknown> = { a: 1 };
  value.self = value;
  return value;
}

class NotPlain {
  readonly field = 1;
}

/** Values no JSON-typed parameter may accept, and a few that look like JSON but are not plain. */
export const notJson: fc.Arbitrary<unknown> = fc.constantFrom<() => unknown>(
  () => undefined,
  () => 10n,
  () => Symbol('s'),
  () => () => 1,
  () => new Date(0),
  () => new Map([['a', 1]]),
  () => new Set([1]),
  () => /regexp/,
  () => new Uint8Array(2),
  () => new NotPlain(),
  () => new Error('an error'),
  () => Promise.resolve(1),
  () => circular(),
  () => [1, , 3],
  () => ({ toJSON: () => 'sneaky' }),
  () => new Proxy({}, { get: () => 1 }),
  () => new String('boxed'),
).map((build) => build());

/** Objects carrying `__proto__` as an own key: JSON.parse makes them, and so does a computed key. */
export const protoKeyObjects: fc.Arbitrary<unknown> = fc.constantFrom<() => unknown>(
  () => JSON.parse('{"__proto__": {"polluted": true}}'),
  () => ({ ['__proto__']: 1 }),
  () => ({ nested: JSON.parse('{"__proto__": []}') }),
  () => [JSON.parse('{"__proto__": null}')],
  () => Object.create(null) as unknown,
  () => Object.assign(Object.create(null) as object, { constructor: 1, prototype: 2 }),
).map((build) => build());

/** Any JSON value, with hostile strings among the keys and values. */
export const awkwardJson: fc.Arbitrary<unknown> = fc.jsonValue({ maxDepth: 3, stringUnit: 'binary' });

/** Anything at all, for a parameter of any type. */
export const anyHostile: fc.Arbitrary<unknown> = fc.oneof(
  hostileString,
  hostileNumber,
  notJson,
  protoKeyObjects,
  deepJson,
  fc.constantFrom(null, undefined, true, false, [], {}, HUGE_STRING),
  fc.anything({ maxDepth: 2, withNullPrototype: true, withBigInt: true, withDate: true, withMap: true, withSet: true, withSparseArray: true, withTypedArray: true, withBoxedValues: true }),
);

/** Ids of every shape: each store answers "unknown" or `invalid_input`, never anything else. */
export const hostileTaskId: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(
    '0'.repeat(32),
    'A'.repeat(32),
    'a'.repeat(31),
    'a'.repeat(33),
    `${'a'.repeat(32)}\n`,
    ` ${'a'.repeat(32)}`,
    'g'.repeat(32),
    '00000000-0000-0000-0000-000000000000',
    '*',
    '%',
    HUGE_STRING,
  ),
  hostileString,
  fc.string({ unit: fc.constantFrom(...'0123456789abcdefABCDEF'), minLength: 30, maxLength: 34 }),
  hostileNumber,
  fc.constantFrom(null, undefined, {}, [], ['a'.repeat(32)], { taskId: 'a'.repeat(32) }),
);

/** The error a hostile value's own code throws, told apart from anything a store throws. */
export class CallerBug extends Error {
  override name = 'CallerBug';
}

const bug = (what: string) => () => {
  throw new CallerBug(`${what} boom`);
};

/**
 * Values whose reading runs the caller's code, which throws: a getter, each Proxy trap a read goes
 * through, a `toJSON`. Each call builds a fresh one.
 */
export const THROWING_VALUES: Record<string, () => object> = {
  'a throwing getter': () => Object.defineProperty({ fine: 1 }, 'boom', { enumerable: true, get: bug('getter') }),
  'a proxy whose get throws': () => new Proxy({ a: 1 }, { get: bug('get trap') }),
  'a proxy whose ownKeys throws': () => new Proxy({ a: 1 }, { ownKeys: bug('ownKeys trap') }),
  'a proxy whose getOwnPropertyDescriptor throws': () => new Proxy({ a: 1 }, { getOwnPropertyDescriptor: bug('descriptor trap') }),
  'a proxy whose getPrototypeOf throws': () => new Proxy({ a: 1 }, { getPrototypeOf: bug('prototype trap') }),
  'a toJSON that throws': () => ({ toJSON: bug('toJSON') }),
  'a getter toJSON that throws': () => Object.defineProperty({}, 'toJSON', { enumerable: true, get: bug('toJSON getter') }),
};

/** The key of each of {@link THROWING_VALUES} whose read throws; absent: reading the object itself throws, or nothing does. */
export const THROWS_AT: Record<string, string> = {
  'a throwing getter': 'boom',
  'a proxy whose get throws': 'a',
  'a proxy whose getOwnPropertyDescriptor throws': 'a',
  'a getter toJSON that throws': 'toJSON',
};

/** An object whose `key` reads `first` once and `later` on every read after. */
export function changingValue(key: string, first: unknown, later: unknown): object {
  let reads = 0;
  return Object.defineProperty({}, key, { enumerable: true, get: () => (reads++ === 0 ? first : later) });
}
