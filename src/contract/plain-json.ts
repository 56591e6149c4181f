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
        let entries: [string, unknown][];
        try {
          isArray = Array.isArray(value);
          const prototype = Object.getPrototypeOf(value);
          if (!isArray && prototype !== Object.prototype && prototype !== null) {
            return { problem: { message: 'objects must be plain JSON objects', path: pathTo(key) } };
          }
          entries = Object.entries(value);
        } catch (error) {
          return { problem: threw(error, pathTo(key)) };
        }
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
  const reason = error instanceof Error ? error.message : String(error);
  return { message: `reading it threw: ${reason}`, path, cause: error };
}
