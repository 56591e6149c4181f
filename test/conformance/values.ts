/**
 * What a value may be, identically in every store: strings (values and keys) are well-formed
 * UTF-16; JSON nests at most 100 levels deep, and deeper input is refused with invalid_input
 * however deep it goes (never a RangeError); owners and tool names are identifiers with a fixed
 * length, not payloads; status messages are bounded by maxPayloadBytes like payloads; and options
 * are refused the same way (null where a group is expected, unknown keys).
 */
import { describe, expect, it } from 'vitest';
import {
  ROOTS,
  TOOL,
  accept,
  bad,
  createTask,
  expectStoreError,
  mustGet,
  observe,
  resultText,
  unknownId,
  useStores,
  type ConformanceTarget,
} from './harness.js';

const LONE = ['\ud800', 'a\udbffb', '\udc00', 'x\udfff'];
/** The documented limit: `[]` is one level, `[[]]` two. */
const MAX_DEPTH = 100;

/** `depth` nested arrays around a number, built without recursion. */
function nested(depth: number): unknown {
  let value: unknown = 1;
  for (let i = 0; i < depth; i++) value = [value];
  return value;
}

/** `depth` nested objects `{ d: … }` around a number. */
function nestedObject(depth: number): Record<string, unknown> {
  let value: Record<string, unknown> = { d: 1 };
  for (let i = 1; i < depth; i++) value = { d: value };
  return value;
}

export function valueConformance(target: ConformanceTarget): void {
  describe('values', () => {
    const open = useStores(target);

    /** A store with a working and a parked task, and a checker that calls change nothing. */
    async function fixture(options?: Parameters<typeof open>[0]) {
      const store = await open(options);
      const working = await createTask(store, { owner: 'alice' });
      const parked = await createTask(store);
      await store.requireInput(parked.id, { approval: ROOTS });
      const ids = [working.id, parked.id];
      async function refuses(what: string, call: () => Promise<unknown>, kind: 'invalid_input' | 'retention_limit_exceeded' = 'invalid_input') {
        const before = await observe(store, ids);
        await expectStoreError(call(), kind, what);
        expect(await observe(store, ids), `${what} changed the store`).toStrictEqual(before);
      }
      return { store, working: working.id, parked: parked.id, refuses };
    }

    it('refuses strings with an unpaired surrogate wherever a string is kept or compared', async () => {
      const { store, working, parked, refuses } = await fixture();
      for (const lone of LONE) {
        await refuses(`a tool name ${JSON.stringify(lone)}`, () => store.createTask({ toolName: lone }));
        await refuses(`an owner ${JSON.stringify(lone)}`, () => store.createTask({ toolName: TOOL, owner: lone }));
        await refuses(`a listing owner ${JSON.stringify(lone)}`, () => store.listTasks({ owner: lone }));
        await refuses('a string in the arguments', () => store.createTask({ toolName: TOOL, arguments: { deep: [lone] } }));
        await refuses('a key in the arguments', () => store.createTask({ toolName: TOOL, arguments: { [lone]: 1 } }));
        await refuses('a status message', () => store.setStatus(working, 'working', lone));
        await refuses('a result', () => store.completeTask(working, resultText(lone)));
        await refuses('an error message', () => store.failTask(working, { code: 1, message: lone }));
        await refuses('error data', () => store.failTask(working, { code: 1, message: 'x', data: { [lone]: true } }));
        await refuses('meta', () => store.setTaskMeta(working, { note: lone }));
        await refuses('a cancel reason', () => store.cancelTask(working, lone));
        await refuses('a request key', () => store.requireInput(working, { [lone]: ROOTS }));
        await refuses('request params', () => store.requireInput(working, { k: { method: 'elicitation/create', params: { message: lone } } }));
        await refuses('an input-required message', () => store.requireInput(working, { k: ROOTS }, lone));
        await refuses('a response key', () => store.applyInputResponses(parked, { [lone]: accept() }));
        await refuses('a response', () => store.applyInputResponses(parked, { approval: accept({ text: lone }) }));
      }
    });

    it('keeps characters outside the BMP (surrogate pairs) exactly, in owners, tool names and JSON', async () => {
      const store = await open();
      const text = 'rocket 🚀 and 𝄞';
      const { taskId } = await store.createTask({ toolName: text, owner: text, arguments: { [text]: text } });
      expect(await store.taskOwner(taskId)).toStrictEqual({ owner: text });
      expect((await store.listTasks({ owner: text })).tasks.map((task) => task.taskId)).toStrictEqual([taskId]);
      const context = await store.resumeContext(taskId);
      expect(context?.toolName).toBe(text);
      expect(context?.arguments).toStrictEqual({ [text]: text });
      expect(await store.setStatus(taskId, 'working', text)).toBe(true);
      expect((await mustGet(store, taskId)).statusMessage).toBe(text);
    });

    it(`accepts JSON nested ${MAX_DEPTH} levels deep and refuses one level more, in every payload`, async () => {
      const { store, working, parked, refuses } = await fixture();
      const { taskId } = await store.createTask({ toolName: TOOL, arguments: nested(MAX_DEPTH) });
      expect((await store.resumeContext(taskId))?.arguments).toStrictEqual(nested(MAX_DEPTH));
      expect(await store.setTaskMeta(taskId, nestedObject(MAX_DEPTH))).toBe(true);
      expect((await mustGet(store, taskId))._meta).toStrictEqual(nestedObject(MAX_DEPTH));

      await refuses('arguments', () => store.createTask({ toolName: TOOL, arguments: nested(MAX_DEPTH + 1) }));
      await refuses('meta', () => store.setTaskMeta(working, nestedObject(MAX_DEPTH + 1)));
      // The result's own object and its content array are two of the levels.
      await refuses('a result', () => store.completeTask(working, { content: [nested(MAX_DEPTH - 1)] }));
      await refuses('error data', () => store.failTask(working, { code: 1, message: 'x', data: nested(MAX_DEPTH) }));
      await refuses('request params', () => store.requireInput(working, { k: { method: 'elicitation/create', params: nestedObject(MAX_DEPTH) } }));
      await refuses('a response', () => store.applyInputResponses(parked, { approval: nestedObject(MAX_DEPTH + 1) }));
    });

    it('refuses JSON of any depth with invalid_input, never a RangeError', async () => {
      const { store, working, parked, refuses } = await fixture();
      for (const depth of [1_000, 10_000, 200_000]) {
        await refuses(`arguments ${depth} deep`, () => store.createTask({ toolName: TOOL, arguments: nested(depth) }));
        await refuses(`meta ${depth} deep`, () => store.setTaskMeta(working, nestedObject(depth)));
        await refuses(`a result ${depth} deep`, () => store.completeTask(working, { content: [nested(depth)] }));
        await refuses(`a response ${depth} deep`, () => store.applyInputResponses(parked, { approval: nestedObject(depth) }));
      }
    });

    it('an object reached twice is plain JSON, not a cycle; one whose JSON text would explode is refused unserialized', async () => {
      const store = await open();
      const shared = { leaf: true };
      const { taskId } = await store.createTask({ toolName: TOOL, arguments: { a: shared, b: [shared, shared] } });
      expect((await store.resumeContext(taskId))?.arguments).toStrictEqual({ a: { leaf: true }, b: [{ leaf: true }, { leaf: true }] });

      // 60 levels of { left: x, right: x }: a small value whose JSON text has 2^60 leaves.
      let exploding: unknown = { leaf: true };
      for (let i = 0; i < 60; i++) exploding = { left: exploding, right: exploding };
      await expectStoreError(store.createTask({ toolName: TOOL, arguments: exploding }), 'retention_limit_exceeded', 'arguments');
      await expectStoreError(store.setTaskMeta(taskId, { exploding }), 'retention_limit_exceeded', 'meta');
      expect((await mustGet(store, taskId))._meta).toBeUndefined();
    });

    it('keeps what JSON shows of a value: a proxy, a getter or -0 is kept as its JSON text says', async () => {
      const store = await open();
      const withGetter = {
        get computed() {
          return 'on read';
        },
      };
      const proxy = new Proxy({ inside: 1 }, { get: (target, key) => (key === 'inside' ? 2 : Reflect.get(target, key)) });
      const { taskId } = await store.createTask({ toolName: TOOL, arguments: { withGetter, proxy, zero: -0 } });
      expect(await store.setTaskMeta(taskId, { proxy })).toBe(true);
      expect(await store.completeTask(taskId, { content: [], structuredContent: { proxy, withGetter } })).toBe(true);

      const context = await store.resumeContext(taskId);
      expect(context?.arguments).toStrictEqual({ withGetter: { computed: 'on read' }, proxy: { inside: 2 }, zero: 0 });
      expect(Object.is((context?.arguments as { zero: number }).zero, 0)).toBe(true);
      expect((await mustGet(store, taskId))._meta).toStrictEqual({ proxy: { inside: 2 } });
      expect((await store.getTaskResult(taskId))?.result?.structuredContent).toStrictEqual({ proxy: { inside: 2 }, withGetter: { computed: 'on read' } });
    });

    it('owners are at most 512 characters; owners and tool names are not measured against maxPayloadBytes', async () => {
      const { store, refuses } = await fixture({ limits: { maxPayloadBytes: 64 } });
      const owner = 'o'.repeat(512);
      const toolName = 't'.repeat(1024);
      const { taskId } = await store.createTask({ toolName, owner });
      expect(await store.taskOwner(taskId)).toStrictEqual({ owner });
      expect((await store.resumeContext(taskId))?.toolName).toBe(toolName);
      await refuses('an owner of 513 characters', () => store.createTask({ toolName: TOOL, owner: 'o'.repeat(513) }));
      await refuses('a 5 MiB owner', () => store.createTask({ toolName: TOOL, owner: 'o'.repeat(5 * 1024 * 1024) }));
      await refuses('a listing owner of 513 characters', () => store.listTasks({ owner: 'o'.repeat(513) }));
      await refuses('a tool name of 1025 characters', () => store.createTask({ toolName: 't'.repeat(1025) }));
    });

    it('a status message over maxPayloadBytes is refused for a task it would apply to, and changes nothing', async () => {
      const { store, working, parked, refuses } = await fixture({ limits: { maxPayloadBytes: 64 } });
      const long = 'm'.repeat(63); // 65 bytes as JSON
      const fits = 'm'.repeat(62); // 64 bytes as JSON
      await refuses('setStatus', () => store.setStatus(working, 'working', long), 'retention_limit_exceeded');
      await refuses('requireInput', () => store.requireInput(working, { k: ROOTS }, long), 'retention_limit_exceeded');
      await refuses('requireInput on a parked task', () => store.requireInput(parked, { approval: ROOTS }, long), 'retention_limit_exceeded');
      expect(await store.setStatus(working, 'working', fits)).toBe(true);
      expect((await mustGet(store, working)).statusMessage).toBe(fits);

      // A call that would not apply is a no-op, as it is for any message.
      const finished = await createTask(store);
      await store.completeTask(finished.id, resultText('done'));
      expect(await store.setStatus(finished.id, 'working', long)).toBe(false);
      expect(await store.requireInput(finished.id, { k: ROOTS }, long)).toBe(false);
      expect(await store.setStatus(unknownId(), 'working', long)).toBe(false);
    });

    it('listTasks(null) is refused like any options that are not an object; undefined lists', async () => {
      const { store, refuses } = await fixture();
      await refuses('null', () => store.listTasks(bad(null)));
      await refuses('a string', () => store.listTasks(bad('all')));
      expect((await store.listTasks(undefined)).tasks).toHaveLength(2);
    });

    it('refuses options the same way: null for a group, unknown keys, bad values', async () => {
      await expectStoreError(open({ limits: bad(null) }), 'invalid_input', 'limits: null');
      await expectStoreError(open({ limits: bad({ bogus: 1 }) }), 'invalid_input', 'an unknown limit');
      await expectStoreError(open({ limits: bad({ maxPayloadBytes: '10' }) }), 'invalid_input', 'a limit as a string');
      await expectStoreError(open({ defaultTtlMs: bad(null) }), 'invalid_input', 'defaultTtlMs: null');
      await expectStoreError(open({ defaultTtlMs: -1 }), 'invalid_input', 'defaultTtlMs: -1');
    });
  });
}
