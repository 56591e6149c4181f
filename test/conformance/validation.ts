/**
 * Validation: every value that fails validation is refused with TaskStoreError kind invalid_input,
 * and the store is left exactly as it was: no task created, nothing changed, no token raised.
 */
import { describe, expect, it } from 'vitest';
import {
  ROOTS,
  TOOL,
  accept,
  bad,
  createTask,
  expectStoreError,
  observe,
  resultText,
  sampleError,
  useStores,
  type ConformanceTarget,
} from './harness.js';

type Case = [what: string, call: () => Promise<unknown>];

function circular(): Record<string, unknown> {
  const value: Record<string, unknown> = { name: 'loop' };
  value.self = value;
  return value;
}

/** Values that are not plain JSON, each labelled. */
function notJson(): [string, unknown][] {
  return [
    ['a function', () => 1],
    ['NaN', Number.NaN],
    ['Infinity', Number.POSITIVE_INFINITY],
    ['a nested -Infinity', { deep: [1, Number.NEGATIVE_INFINITY] }],
    ['a circular object', circular()],
    ['a bigint', BigInt(1)],
    ['a symbol', Symbol('s')],
    ['a Map', new Map([['a', 1]])],
    ['a nested function', { handler: () => 1 }],
    ['a string with NUL', 'a\u0000b'],
    ['a key with NUL', { 'a\u0000b': 1 }],
  ];
}

export function validationConformance(target: ConformanceTarget): void {
  describe('validation', () => {
    const open = useStores(target);

    /** A store holding a working, a parked and a finished task, and a checker for refused calls. */
    async function fixture() {
      const store = await open();
      const working = await createTask(store, { owner: 'alice' });
      const parked = await createTask(store);
      await store.requireInput(parked.id, { approval: ROOTS });
      const done = await createTask(store);
      await store.completeTask(done.id, resultText('done'));
      const ids = [working.id, parked.id, done.id];
      const tokens = [working.token, parked.token, done.token];

      async function refuses(cases: Case[]): Promise<void> {
        for (const [what, call] of cases) {
          const before = await observe(store, ids);
          await expectStoreError(call(), 'invalid_input', what);
          expect(await observe(store, ids), `${what} changed the store`).toStrictEqual(before);
          for (const token of tokens) expect(token.isCancelled, `${what} raised a token`).toBe(false);
        }
      }
      return { store, working: working.id, parked: parked.id, done: done.id, refuses };
    }

    it('createTask refuses a bad ttl, tool name, owner, poll interval, or arguments that are not JSON', async () => {
      const { store, refuses } = await fixture();
      const create = (input: unknown) => () => store.createTask(bad(input));
      await refuses([
        ['ttlMs -1', create({ toolName: TOOL, ttlMs: -1 })],
        ['ttlMs 1.5', create({ toolName: TOOL, ttlMs: 1.5 })],
        ['ttlMs NaN', create({ toolName: TOOL, ttlMs: Number.NaN })],
        ['ttlMs Infinity', create({ toolName: TOOL, ttlMs: Number.POSITIVE_INFINITY })],
        ['ttlMs as a string', create({ toolName: TOOL, ttlMs: '60000' })],
        ['an empty tool name', create({ toolName: '' })],
        ['a tool name with NUL', create({ toolName: 'to\u0000ol' })],
        ['a tool name that is not a string', create({ toolName: 42 })],
        ['no tool name', create({})],
        ['an owner with NUL', create({ toolName: TOOL, owner: 'ali\u0000ce' })],
        ['an owner that is not a string', create({ toolName: TOOL, owner: 42 })],
        ['pollIntervalMs -1', create({ toolName: TOOL, pollIntervalMs: -1 })],
        ['pollIntervalMs 1.5', create({ toolName: TOOL, pollIntervalMs: 1.5 })],
        ['no input at all', create(null)],
        ['a misspelled option', create({ toolName: TOOL, ttl: 5 })],
        ...notJson().map(([what, value]): Case => [`arguments: ${what}`, create({ toolName: TOOL, arguments: value })]),
      ]);
    });

    it('requireInput refuses malformed requests, keys and messages, and leaves the keys unspent', async () => {
      const { store, working, parked, refuses } = await fixture();
      const park = (requests: unknown, message?: unknown) => () => store.requireInput(parked, bad(requests), bad(message));
      await refuses([
        ['an unknown method', park({ k: { method: 'tools/call', params: {} } })],
        ['a request without a method', park({ k: { params: {} } })],
        ['an elicitation without params', park({ k: { method: 'elicitation/create' } })],
        ['params that are an array', park({ k: { method: 'sampling/createMessage', params: [] } })],
        ['params that are a string', park({ k: { method: 'elicitation/create', params: 'ask' } })],
        ['a request that is null', park({ k: null })],
        ['a request with an unknown field', park({ k: { method: 'roots/list', extra: 1 } })],
        ['an empty key', park({ '': ROOTS })],
        ['a key with NUL', park({ 'k\u0000': ROOTS })],
        ['requests that are null', park(null)],
        ['requests that are an array', park([ROOTS])],
        ['a message with NUL', park({ k: ROOTS }, 'wait\u0000')],
        ['a message that is not a string', park({ k: ROOTS }, 42)],
        ['a bad request next to a good one', park({ good: ROOTS, k: { method: 'nope', params: {} } })],
        ...notJson().map(([what, value]): Case => [`params: ${what}`, park({ k: { method: 'elicitation/create', params: { v: value } } })]),
        ['a bad request on a working task', () => store.requireInput(working, bad({ k: { method: 'nope' } }))],
      ]);
      // None of the refused keys was issued.
      expect(await store.requireInput(working, { k: ROOTS, good: ROOTS })).toBe(true);
    });

    it('applyInputResponses refuses responses that are not JSON objects', async () => {
      const { store, parked, refuses } = await fixture();
      const answer = (responses: unknown) => () => store.applyInputResponses(parked, bad(responses));
      await refuses([
        ['a string response', answer({ approval: 'yes' })],
        ['an array response', answer({ approval: [accept()] })],
        ['a null response', answer({ approval: null })],
        ['a number response', answer({ approval: 42 })],
        ['an empty key', answer({ '': accept() })],
        ['a key with NUL', answer({ 'appro\u0000val': accept() })],
        ['responses that are null', answer(null)],
        ['responses that are an array', answer([accept()])],
        ['a bad response next to a good one', answer({ approval: accept(), other: 'no' })],
        ...notJson().map(([what, value]): Case => [`a response holding ${what}`, answer({ approval: { action: 'accept', content: { v: value } } })]),
      ]);
      expect(await store.applyInputResponses(parked, { approval: accept() })).toMatchObject({ accepted: ['approval'], complete: true });
    });

    it('completeTask refuses a malformed result, and the task stays running', async () => {
      const { store, working, refuses } = await fixture();
      const complete = (result: unknown) => () => store.completeTask(working, bad(result));
      await refuses([
        ['a result without content', complete({})],
        ['content that is not an array', complete({ content: 'done' })],
        ['isError that is not a boolean', complete({ content: [], isError: 'yes' })],
        ['structuredContent that is an array', complete({ content: [], structuredContent: [] })],
        ['_meta that is a string', complete({ content: [], _meta: 'm' })],
        ['a null result', complete(null)],
        ...notJson().map(([what, value]): Case => [`content holding ${what}`, complete({ content: [{ type: 'text', text: value }] })]),
      ]);
    });

    it('failTask refuses a malformed JSON-RPC error, and the task stays running', async () => {
      const { store, working, refuses } = await fixture();
      const fail = (error: unknown) => () => store.failTask(working, bad(error));
      await refuses([
        ['a fractional code', fail({ code: 1.5, message: 'x' })],
        ['a NaN code', fail({ code: Number.NaN, message: 'x' })],
        ['a string code', fail({ code: '-32602', message: 'x' })],
        ['no code', fail({ message: 'x' })],
        ['no message', fail({ code: -32602 })],
        ['a message that is not a string', fail({ code: -32602, message: 42 })],
        ['a message with NUL', fail({ code: -32602, message: 'bad\u0000' })],
        ['an unknown field', fail({ ...sampleError(), stack: 'at x' })],
        ['a null error', fail(null)],
        ...notJson().map(([what, value]): Case => [`data holding ${what}`, fail({ code: -32602, message: 'x', data: value })]),
      ]);
    });

    it('setStatus refuses an unknown status or a bad message', async () => {
      const { store, working, refuses } = await fixture();
      const status = (value: unknown, message?: unknown) => () => store.setStatus(working, bad(value), bad(message));
      await refuses([
        ['status "done"', status('done')],
        ['status ""', status('')],
        ['status "WORKING"', status('WORKING')],
        ['status null', status(null)],
        ['a message with NUL', status('working', 'step\u00002')],
        ['a message that is not a string', status('working', 7)],
      ]);
    });

    it('setTtl refuses a negative, fractional or non-numeric ttl', async () => {
      const { store, working, done, refuses } = await fixture();
      const ttl = (id: string, value: unknown) => () => store.setTtl(id, bad(value));
      await refuses([
        ['ttl -1', ttl(working, -1)],
        ['ttl 1.5', ttl(working, 1.5)],
        ['ttl NaN', ttl(working, Number.NaN)],
        ['ttl Infinity', ttl(working, Number.POSITIVE_INFINITY)],
        ['ttl as a string', ttl(working, '5')],
        ['ttl -1 on a finished task', ttl(done, -1)],
      ]);
    });

    it('setTaskMeta refuses meta that is not a plain JSON object', async () => {
      const { store, working, done, refuses } = await fixture();
      await store.setTaskMeta(working, { kept: true });
      const meta = (id: string, value: unknown) => () => store.setTaskMeta(id, bad(value));
      await refuses([
        ['an array', meta(working, [])],
        ['a string', meta(working, 'meta')],
        ['null', meta(working, null)],
        ['a number', meta(working, 42)],
        ['an array on a finished task', meta(done, [1])],
        ...notJson().map(([what, value]): Case => [`meta holding ${what}`, meta(working, { v: value })]),
        ['a circular meta', meta(working, circular())],
      ]);
    });

    it('cancelTask refuses a bad reason without cancelling or raising the token', async () => {
      const { store, working, refuses } = await fixture();
      await refuses([
        ['a reason with NUL', () => store.cancelTask(working, 'stop\u0000')],
        ['a reason that is not a string', () => store.cancelTask(working, bad(42))],
      ]);
    });

    it('listTasks refuses a bad limit, status, owner or cursor', async () => {
      const { store, refuses } = await fixture();
      const list = (options: unknown) => () => store.listTasks(bad(options));
      await refuses([
        ['limit 0', list({ limit: 0 })],
        ['limit -1', list({ limit: -1 })],
        ['limit 1.5', list({ limit: 1.5 })],
        ['limit 1001', list({ limit: 1_001 })],
        ['limit NaN', list({ limit: Number.NaN })],
        ['limit as a string', list({ limit: '10' })],
        ['status "done"', list({ status: 'done' })],
        ['an owner that is not a string', list({ owner: 42 })],
        ['an owner with NUL', list({ owner: 'a\u0000' })],
        ['a cursor that no page returned', list({ cursor: 'not-a-cursor' })],
        ['a cursor that is not a string', list({ cursor: 42 })],
        ['a misspelled option', list({ page: 2 })],
      ]);
      expect((await store.listTasks({ limit: 1 })).tasks).toHaveLength(1);
    });

    it('waitForCompletion refuses options whose signal is not an AbortSignal', async () => {
      const { store, done } = await fixture();
      await expectStoreError(store.waitForCompletion(done, bad({ signal: 'abort' })), 'invalid_input', 'a string signal');
      await expectStoreError(store.waitForCompletion(done, bad({ timeout: 5 })), 'invalid_input', 'an unknown option');
      expect((await store.waitForCompletion(done))?.task.taskId).toBe(done);
    });

    it('a failed validation reports invalid_input even when the task is finished', async () => {
      // Validation comes first: a malformed call is a caller bug whatever the task's state.
      const { store, done } = await fixture();
      await expectStoreError(store.setStatus(done, bad('done')), 'invalid_input', 'a bad status on a finished task');
      await expectStoreError(store.setTaskMeta(done, bad([])), 'invalid_input', 'bad meta on a finished task');
      await expectStoreError(store.requireInput(done, bad({ k: { method: 'nope' } })), 'invalid_input', 'a bad request on a finished task');
    });
  });
}
