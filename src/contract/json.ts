/** Small helpers for the plain JSON values the stores keep and compare. */

/**
 * A private copy of a validated JSON value. The store never shares an object with its callers,
 * so a caller mutating what it passed in (or what it got back) cannot change a stored task.
 */
export function cloneJson<T>(value: T): T {
  return structuredClone(value);
}

/**
 * Whether two JSON values are equal as JSON: object key order does not matter, array order does.
 * This is what makes reissuing an outstanding input request "the same question".
 */
export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a) && Array.isArray(b)) {
    return a.length === b.length && a.every((item, index) => sameJson(item, b[index]));
  }
  const left = Object.entries(a);
  const right = b as Record<string, unknown>;
  if (left.length !== Object.keys(right).length) return false;
  return left.every(([key, value]) => Object.hasOwn(right, key) && sameJson(value, right[key]));
}

const isSurrogate = (unit: number): boolean => unit >= 0xd800 && unit <= 0xdfff;

/**
 * Orders strings by code point, which is also UTF-8 byte order (what tower-mcp's `BTreeSet` and
 * PostgreSQL's "C" collation give). Plain `sort()` compares UTF-16 units, which differs only when a
 * character above U+FFFF meets one in U+E000..U+FFFF.
 */
export function compareKeys(a: string, b: string): number {
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    if (isSurrogate(x) !== isSurrogate(y)) return isSurrogate(x) ? 1 : -1;
    return x - y;
  }
  return a.length - b.length;
}

export function sortedKeys(keys: Iterable<string>): string[] {
  return [...keys].sort(compareKeys);
}
