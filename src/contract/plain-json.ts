/**
 * What a value must be to cross the TaskStore API as JSON, identically for every store:
 *
 * - strings and keys are well-formed UTF-16 and hold no NUL character: PostgreSQL's text and jsonb
 *   can hold neither a NUL nor an unpaired surrogate (text turns one into U+FFFD, merging two
 *   principals; jsonb refuses it), so both stores refuse them rather than differ;
 * - numbers are finite; objects are plain (arrays, or objects with Object's prototype or none) and
 *   have no `__proto__` key; nothing is circular;
 * - arrays and objects nest at most {@link MAX_JSON_DEPTH} levels deep. The check is a loop, not a
 *   recursion, and stops at the limit, so no depth of input can overflow the stack here, and nothing
 *   deeper ever reaches the code that does recurse (JSON.stringify, structuredClone, jsonb).
 */

import { readingThrew } from './errors.js';

/** `[]` and `{}` are one level deep; `[[1]]` is two. */
export const MAX_JSON_DEPTH = 100;

export interface JsonProblem {
  message: string;
  path: (string | number)[];
  /** The caller's own error, when reading the value threw. */
  cause?: unknown;
}

const hasNul = (text: string): boolean => text.includes('\u0000');
const isWellFormed = (text: string): boolean => (text as string & { isWellFormed(): boolean }).isWellFormed();

/** Why a string (a value or a key: `what`) may not be stored, or null. */
export function textProblem(text: string, what: 'strings' | 'keys' = 'strings'): string | null {
  if (hasNul(text)) return `${what} must not contain NUL characters`;
  if (!isWellFormed(text)) return `${what} must be well-formed UTF-16 (no unpaired surrogates)`;
  return null;
}

/** A read that ran the caller's code, which threw: at `key` of the object, or (null) the object itself. */
export interface ReadThrew {
  threw: unknown;
  key: string | null;
}

/**
 * The own enumerable string-keyed entries of `value`, read as `Object.entries` reads them (keys,
 * then each key's descriptor, then its value), each once; or where a read threw.
 */
export function readEntries(value: object): { entries: [string, unknown][] } | ReadThrew {
  let keys: (string | symbol)[];
  try {
    keys = Reflect.ownKeys(value);
  } catch (error) {
    return { threw: error, key: null };
  }
  const entries: [string, unknown][] = [];
  for (const key of keys) {
    if (typeof key !== 'string') continue;
    try {
      if (Reflect.getOwnPropertyDescriptor(value, key)?.enumerable) entries.push([key, (value as Record<string, unknown>)[key]]);
    } catch (error) {
      return { threw: error, key };
    }
  }
  return { entries };
}

/**
 * A plain object (Object's prototype or none) read once into a detached shallow copy with the same
 * prototype, so a schema checking the copy runs no caller code for its fields and sees each as
 * first read. Anything else is returned as it is, for the schema to judge.
 */
export function detachFields(value: unknown): { value: unknown } | ReadThrew {
  if (typeof value !== 'object' || value === null) return { value };
  let prototype: object | null;
  try {
    if (Array.isArray(value)) return { value };
    prototype = Object.getPrototypeOf(value);
  } catch (error) {
    return { threw: error, key: null };
  }
  if (prototype !== Object.prototype && prototype !== null) return { value };
  const read = readEntries(value);
  if ('threw' in read) return read;
  const copy = Object.create(prototype) as Record<string, unknown>;
  // defineProperty, not assignment: an own `__proto__` key stays a key, for the schema to refuse.
  for (const [key, item] of read.entries) Object.defineProperty(copy, key, { value: item, enumerable: true, writable: true, configurable: true });
  return { value: copy };
}

interface Frame {
  readonly original: object;
  readonly copy: Record<string, unknown> | unknown[];
  /** Where the container sits in its parent (unused for the root). */
  readonly key: string | number;
  readonly isArray: boolean;
  readonly entries: [string, unknown][];
  next: number;
}

/**
 * Reads `root` once, checking that it is plain JSON as defined above, into a detached copy: the
 * stores keep and serialize the copy, so no caller code (a getter, a proxy's trap) runs after
 * validation, and a value that would read differently the second time cannot slip past it. A read
 * that throws is a problem at its path, with the caller's error as `cause`.
 */
export function readPlainJson(root: unknown): { value: unknown } | { problem: JsonProblem } {
  const stack: Frame[] = [];
  const onPath = new Set<object>();
  /** Containers already read: a value shared by several parents is read once, and shared in the copy. */
  const copies = new Map<object, unknown>();
  const pathTo = (key?: string | number): (string | number)[] => {
    const path = stack.slice(1).map((frame) => frame.key);
    return key === undefined ? path : [...path, key];
  };

  /** A scalar's copy, or a container entered (its items are read by the loop below). */
  const visit = (value: unknown, key?: string | number): { value: unknown } | { problem: JsonProblem } => {
    switch (typeof value) {
      case 'string': {
        const message = textProblem(value);
        return message ? { problem: { message, path: pathTo(key) } } : { value };
      }
      case 'number':
        return Number.isFinite(value) ? { value } : { problem: { message: 'numbers must be finite', path: pathTo(key) } };
      case 'boolean':
        return { value };
      case 'object': {
        if (value === null) return { value };
        if (copies.has(value)) return { value: copies.get(value) };
        if (onPath.has(value)) return { problem: { message: 'value must not be circular', path: pathTo(key) } };
        let isArray: boolean;
        try {
          isArray = Array.isArray(value);
          const prototype = Object.getPrototypeOf(value);
          if (!isArray && prototype !== Object.prototype && prototype !== null) {
            return { problem: { message: 'objects must be plain JSON objects', path: pathTo(key) } };
          }
        } catch (error) {
          return { problem: threw(error, pathTo(key)) };
        }
        const read = readEntries(value);
        if ('threw' in read) {
          const at = read.key === null ? [] : [isArray ? Number(read.key) : read.key];
          return { problem: threw(read.threw, [...pathTo(key), ...at]) };
        }
        const entries = read.entries;
        if (stack.length >= MAX_JSON_DEPTH) {
          return { problem: { message: `arrays and objects must not nest more than ${MAX_JSON_DEPTH} levels deep`, path: pathTo(key) } };
        }
        const copy: Record<string, unknown> | unknown[] = isArray ? [] : {};
        onPath.add(value);
        stack.push({ original: value, copy, key: key ?? '', isArray, entries, next: 0 });
        return { value: copy };
      }
      default:
        return { problem: { message: `${typeof value} is not a JSON value`, path: pathTo(key) } };
    }
  };

  const top = visit(root);
  if ('problem' in top) return top;
  while (stack.length > 0) {
    const frame = stack[stack.length - 1]!;
    if (frame.next === frame.entries.length) {
      stack.pop();
      onPath.delete(frame.original);
      copies.set(frame.original, frame.copy);
      continue;
    }
    const [key, item] = frame.entries[frame.next++]!;
    if (!frame.isArray) {
      const message = key === '__proto__' ? 'the key __proto__ is not allowed' : textProblem(key, 'keys');
      if (message) return { problem: { message, path: pathTo() } };
    }
    const read = visit(item, frame.isArray ? Number(key) : key);
    if ('problem' in read) return read;
    (frame.copy as Record<string, unknown>)[key] = read.value;
  }
  return top;
}

function threw(error: unknown, path: (string | number)[]): JsonProblem {
  return { message: readingThrew(error), path, cause: error };
}
