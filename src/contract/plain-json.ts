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
  readonly container: object;
  /** Where the container sits in its parent (unused for the root). */
  readonly key: string | number;
  readonly isArray: boolean;
  readonly entries: [string, unknown][];
  next: number;
}

/** Why `root` is not plain JSON as defined above, with the path to the offending value; or null. */
export function findJsonProblem(root: unknown): JsonProblem | null {
  const stack: Frame[] = [];
  const onPath = new Set<object>();
  /** Containers already found valid: a value shared by several parents is checked once. */
  const valid = new Set<object>();
  const pathTo = (key?: string | number): (string | number)[] => {
    const path = stack.slice(1).map((frame) => frame.key);
    return key === undefined ? path : [...path, key];
  };

  /** Checks a scalar, or enters a container (its items are checked by the loop below). */
  const visit = (value: unknown, key?: string | number): JsonProblem | null => {
    switch (typeof value) {
      case 'string': {
        const message = textProblem(value);
        return message ? { message, path: pathTo(key) } : null;
      }
      case 'number':
        return Number.isFinite(value) ? null : { message: 'numbers must be finite', path: pathTo(key) };
      case 'boolean':
        return null;
      case 'object': {
        if (value === null || valid.has(value)) return null;
        if (onPath.has(value)) return { message: 'value must not be circular', path: pathTo(key) };
        const isArray = Array.isArray(value);
        const prototype = Object.getPrototypeOf(value);
        if (!isArray && prototype !== Object.prototype && prototype !== null) {
          return { message: 'objects must be plain JSON objects', path: pathTo(key) };
        }
        if (stack.length >= MAX_JSON_DEPTH) {
          return { message: `arrays and objects must not nest more than ${MAX_JSON_DEPTH} levels deep`, path: pathTo(key) };
        }
        onPath.add(value);
        stack.push({ container: value, key: key ?? '', isArray, entries: Object.entries(value), next: 0 });
        return null;
      }
      default:
        return { message: `${typeof value} is not a JSON value`, path: pathTo(key) };
    }
  };

  let problem = visit(root);
  while (problem === null && stack.length > 0) {
    const frame = stack[stack.length - 1]!;
    if (frame.next === frame.entries.length) {
      stack.pop();
      onPath.delete(frame.container);
      valid.add(frame.container);
      continue;
    }
    const [key, item] = frame.entries[frame.next++]!;
    if (!frame.isArray) {
      const message = key === '__proto__' ? 'the key __proto__ is not allowed' : textProblem(key, 'keys');
      if (message) return { message, path: pathTo() };
    }
    problem = visit(item, frame.isArray ? Number(key) : key);
  }
  return problem;
}
