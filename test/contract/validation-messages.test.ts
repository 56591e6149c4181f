/**
 * What a caller reads when the contract refuses an argument: `invalid <field path>: <problem>`,
 * with kind `invalid_input` (or `invalid_transition` for a rule of the protocol). Both stores
 * validate with these functions, so these are the words every store answers with.
 */
import { describe, expect, it } from 'vitest';
import { checkKeysReusable } from '../../src/contract/input-requests.js';
import { closedWhileWaiting, storeClosed } from '../../src/contract/errors.js';
import { memoryStoreOptionsSchema, parseOptions } from '../../src/contract/options.js';
import { readPlainJson } from '../../src/contract/plain-json.js';
import { validate } from '../../src/contract/validation.js';
import { TaskStoreError, type TaskStoreErrorKind } from '../../src/index.js';

function refusal(call: () => unknown): { kind: TaskStoreErrorKind; message: string } {
  try {
    call();
  } catch (error) {
    expect(error).toBeInstanceOf(TaskStoreError);
    return { kind: (error as TaskStoreError).kind, message: (error as TaskStoreError).message };
  }
  throw new Error('the call was accepted');
}

const ID = '0123456789abcdef0123456789abcdef';
const tool = (extra: Record<string, unknown>) => validate.createTask({ toolName: 't', ...extra } as never);

class NotPlain {
  x = 1;
}
const circular: { items: unknown[] } = { items: [1] };
circular.items.push(circular);
let tooDeep: unknown = 1;
for (let depth = 0; depth < 101; depth++) tooDeep = [tooDeep];

describe('invalid_input messages name the field and the problem', () => {
  const cases: [string, () => unknown, string][] = [
    ['a task id that is not a string', () => validate.taskId(5 as never), 'invalid taskId: Invalid input: expected string, received number'],
    ['an empty tool name', () => tool({ toolName: '' }), 'invalid input.toolName: Too small: expected string to have >=1 characters'],
    ['an unknown field', () => tool({ nope: 1 }), 'invalid input: Unrecognized key: "nope"'],
    ['a non-finite number, inside an array', () => tool({ arguments: { a: [0, NaN] } }), 'invalid input.arguments.a.1: numbers must be finite'],
    ['a non-finite number before valid values', () => tool({ arguments: { a: Infinity, b: 1, c: [2] } }), 'invalid input.arguments.a: numbers must be finite'],
    ['a circular value', () => tool({ arguments: circular }), 'invalid input.arguments.items.1: value must not be circular'],
    ['a class instance', () => tool({ arguments: { k: new NotPlain() } }), 'invalid input.arguments.k: objects must be plain JSON objects'],
    ['nesting over 100 levels', () => tool({ arguments: tooDeep }), `invalid input.arguments${'.0'.repeat(100)}: arrays and objects must not nest more than 100 levels deep`],
    ['a function', () => tool({ arguments: { f: () => 1 } }), 'invalid input.arguments.f: function is not a JSON value'],
    ['a __proto__ key', () => tool({ arguments: JSON.parse('{"x":{"__proto__":1}}') }), 'invalid input.arguments.x: the key __proto__ is not allowed'],
    ['a NUL in a key', () => tool({ arguments: { x: { 'a\u0000': 1 } } }), 'invalid input.arguments.x: keys must not contain NUL characters'],
    ['a NUL in a string', () => tool({ arguments: { x: ['a\u0000'] } }), 'invalid input.arguments.x.0: strings must not contain NUL characters'],
    ['a lone surrogate', () => tool({ arguments: { x: '\ud800' } }), 'invalid input.arguments.x: strings must be well-formed UTF-16 (no unpaired surrogates)'],
    ['a lone surrogate in the owner', () => tool({ owner: '\udbff' }), 'invalid input.owner: strings must be well-formed UTF-16 (no unpaired surrogates)'],
    ['a negative ttl', () => tool({ ttlMs: -1 }), 'invalid input.ttlMs: Too small: expected number to be >=0'],
    ['a ttl over 1000 years', () => validate.setTtl(ID, 31_557_600_000_001), 'invalid ttlMs: Too big: expected number to be <=31557600000000'],
    ['a cursor the store never issued', () => validate.listTasks({ cursor: 'abc' }), 'invalid options.cursor: not a cursor this store issued'],
    ['a page limit of 0', () => validate.listTasks({ limit: 0 }), 'invalid options.limit: Too small: expected number to be >=1'],
    ['null list options', () => validate.listTasks(null), 'invalid options: Invalid input: expected object, received null'],
    ['a status message that is not a string', () => validate.setStatus(ID, 'working', 5), 'invalid message: Invalid input: expected string, received number'],
    ['a status there is not', () => validate.setStatus(ID, 'paused' as never, undefined), 'invalid status: Invalid option: expected one of "working"|"input_required"|"completed"|"failed"|"cancelled"'],
    ['a store option out of range', () => parseOptions(memoryStoreOptionsSchema, { limits: { maxTasks: 0 } }), 'invalid options.limits.maxTasks: Too small: expected number to be >=1'],
    ['an array as meta', () => validate.setTaskMeta(ID, [] as never), 'invalid meta: Invalid input: expected record, received array'],
    ['a result without content', () => validate.completeTask(ID, {} as never), 'invalid result.content: Invalid input: expected array, received undefined'],
    ['a fractional error code', () => validate.failTask(ID, { code: 1.5, message: 'x' }), 'invalid error.code: Invalid input: expected int, received number'],
    ['a cancel reason that is not a string', () => validate.cancelTask(ID, 7), 'invalid reason: Invalid input: expected string, received number'],
    ['an input request with params that are not an object', () => validate.requireInput(ID, { a: { method: 'elicitation/create', params: 3 } } as never, undefined), 'invalid requests.a.params: Invalid input: expected record, received number'],
    ['a request message that is not a string', () => validate.requireInput(ID, {}, 3), 'invalid message: Invalid input: expected string, received number'],
    ['an input response that is not an object', () => validate.applyInputResponses(ID, { a: 3 } as never), 'invalid responses.a: Invalid input: expected record, received number'],
    ['a signal that is not an AbortSignal', () => validate.waitForCompletion(ID, { signal: 1 }), 'invalid options.signal: Invalid input: expected AbortSignal, received number'],
    ['a watched id that is not a string', () => validate.taskIds([1] as never), 'invalid taskIds.0: Invalid input: expected string, received number'],
  ];
  for (const [what, call, message] of cases) {
    it(what, () => {
      expect(refusal(call)).toStrictEqual({ kind: 'invalid_input', message });
    });
  }

  it('an object without a prototype is plain JSON, as one parsed from text is', () => {
    const bare = Object.assign(Object.create(null) as Record<string, unknown>, { region: 'eu', nested: Object.create(null) });
    expect(readPlainJson(bare)).toStrictEqual({ value: { region: 'eu', nested: {} } });
    expect(tool({ arguments: bare }).arguments).toStrictEqual({ region: 'eu', nested: {} });
  });

  it('an unknown input request method lists the methods there are', () => {
    expect(refusal(() => validate.requireInput(ID, { a: { method: 'nope' } } as never, undefined))).toStrictEqual({
      kind: 'invalid_input',
      message: "invalid requests.a.method: Invalid discriminator value. Expected 'elicitation/create' | 'sampling/createMessage' | 'roots/list'",
    });
  });

  it('each input request method takes its own shape', () => {
    expect(validate.requireInput(ID, { r: { method: 'roots/list' } }, undefined).requests).toStrictEqual({ r: { method: 'roots/list' } });
    const sampling = { method: 'sampling/createMessage' as const, params: { maxTokens: 1 } };
    expect(validate.requireInput(ID, { s: sampling }, undefined).requests).toStrictEqual({ s: sampling });
    expect(refusal(() => validate.requireInput(ID, { s: { method: 'sampling/createMessage' } } as never, undefined)).message).toBe(
      'invalid requests.s.params: undefined is not a JSON value',
    );
    expect(refusal(() => validate.requireInput(ID, { r: { method: 'roots/list', extra: 1 } } as never, undefined)).message).toBe(
      'invalid requests.r: Unrecognized key: "extra"',
    );
  });

  it('the largest ttl, 1000 years, is accepted', () => {
    expect(validate.setTtl(ID, 31_557_600_000_000).ttlMs).toBe(31_557_600_000_000);
  });
});

describe('rules of the protocol', () => {
  it('setStatus refuses a terminal status and says which calls reach it', () => {
    expect(refusal(() => validate.setStatus(ID, 'completed', undefined))).toStrictEqual({
      kind: 'invalid_transition',
      message: "setStatus is for non-terminal progress; use completeTask, failTask or cancelTask to reach 'completed'",
    });
  });

  it('a spent input request key is named, one or several', () => {
    const spent = () => ({ state: 'spent' as const });
    expect(refusal(() => checkKeysReusable({ a: { method: 'roots/list' } }, spent))).toStrictEqual({
      kind: 'invalid_transition',
      message: "input request keys must be unique over a task's lifetime, but a already was used by this task; use a new key to ask again",
    });
    expect(refusal(() => checkKeysReusable({ b: { method: 'roots/list' }, c: { method: 'roots/list' } }, spent)).message).toBe(
      "input request keys must be unique over a task's lifetime, but b, c already were used by this task; use a new key to ask again",
    );
  });

  it('an outstanding key may be asked again with the same question, not a different one', () => {
    const outstanding = () => ({ state: 'outstanding' as const, request: { method: 'roots/list' as const } });
    expect(() => checkKeysReusable({ d: { method: 'roots/list' } }, outstanding)).not.toThrow();
    expect(() => checkKeysReusable({ d: { method: 'elicitation/create', params: {} } }, outstanding)).toThrow(
      "input request keys must be unique over a task's lifetime, but d already was used by this task",
    );
    expect(() => checkKeysReusable({ e: { method: 'roots/list' } }, () => undefined)).not.toThrow();
  });
});

describe('a closed store', () => {
  it('says so, as a backend error', () => {
    expect([storeClosed(), closedWhileWaiting()].map((error) => [error.name, error.kind, error.message])).toStrictEqual([
      ['TaskStoreError', 'backend', 'the task store is closed'],
      ['TaskStoreError', 'backend', 'the task store was closed while waiting for the task'],
    ]);
  });
});
