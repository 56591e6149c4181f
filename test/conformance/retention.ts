/**
 * Retention limits. Sizes are UTF-8 bytes of compact JSON and every limit is inclusive. An
 * oversized completion or failure still ends the task (failed, with a fixed content-free error),
 * wakes its waiters, and throws retention_limit_exceeded; every other oversized write changes
 * nothing. maxTasks and maxRetainedBytes run only for targets that enforce them.
 */
import { describe, expect, it } from 'vitest';
import type { RetentionLimits, TaskOwner } from '../../src/index.js';
import {
  LONG_TTL,
  ROOTS,
  accept,
  ask,
  capabilities,
  createTask,
  elicit,
  expectStoreError,
  expectTerminalSnapshot,
  finish,
  listAllIds,
  mustGet,
  mustSnapshot,
  observe,
  outstandingKeys,
  resultText,
  sized,
  sleep,
  statusOf,
  unknownId,
  useStores,
  within,
  type ConformanceTarget,
  type ReapableTaskStore,
} from './harness.js';

const LIMIT = 512;
const MARKER = 'SECRET-PAYLOAD-MARKER';
const limits: RetentionLimits = { maxPayloadBytes: LIMIT };

export function retentionConformance(target: ConformanceTarget): void {
  const caps = capabilities(target);

  describe('retention: payload size', () => {
    const open = useStores(target);

    it('arguments exactly at maxPayloadBytes are accepted, one byte over is refused and nothing is created', async () => {
      const store = await open({ limits });
      const fits = sized(LIMIT, (pad) => ({ note: 'ünïcödé ✓', pad }));
      const { id } = await createTask(store, { arguments: fits });
      expect((await store.resumeContext(id))?.arguments).toStrictEqual(fits);

      const over = sized(LIMIT + 1, (pad) => ({ note: 'ünïcödé ✓', pad }));
      await expectStoreError(createTask(store, { arguments: over }), 'retention_limit_exceeded', 'oversized arguments');
      expect(await listAllIds(store)).toStrictEqual([id]);
    });

    it('multi-byte characters are counted as UTF-8 bytes, not as characters', async () => {
      const store = await open({ limits });
      // 'é' is one character and two bytes: this value is under the limit in characters but over it in bytes.
      const wide = { text: 'é'.repeat(LIMIT / 2) };
      expect(JSON.stringify(wide).length).toBeLessThanOrEqual(LIMIT);
      expect(Buffer.byteLength(JSON.stringify(wide))).toBeGreaterThan(LIMIT);
      await expectStoreError(createTask(store, { arguments: wide }), 'retention_limit_exceeded', 'arguments over the limit in bytes');
      expect(await listAllIds(store)).toStrictEqual([]);
    });

    it('a result exactly at the limit completes the task', async () => {
      const store = await open({ limits });
      const { id } = await createTask(store);
      const result = sized(LIMIT, (pad) => resultText(pad));
      expect(await store.completeTask(id, result)).toBe(true);
      const snapshot = await mustSnapshot(store, id);
      expect(snapshot.task.status).toBe('completed');
      expect(snapshot.result).toStrictEqual(result);
    });

    it('an error exactly at the limit fails the task with it', async () => {
      const store = await open({ limits });
      const { id } = await createTask(store);
      const error = sized(LIMIT, (pad) => ({ code: -32000, message: 'too big', data: { pad } }));
      expect(await store.failTask(id, error)).toBe(true);
      expect((await mustSnapshot(store, id)).error).toStrictEqual(error);
    });

    for (const how of ['completeTask', 'failTask'] as const) {
      it(`an oversized ${how} payload fails the task with the fixed error, wakes waiters, and throws`, async () => {
        const store = await open({ limits });
        const { id } = await createTask(store);
        await store.requireInput(id, ask('k'));
        const waiter = store.waitForCompletion(id);
        await sleep(10);

        const call =
          how === 'completeTask'
            ? store.completeTask(id, sized(LIMIT + 1, (pad) => resultText(MARKER + pad)))
            : store.failTask(id, sized(LIMIT + 1, (pad) => ({ code: -32000, message: MARKER, data: pad })));
        await expectStoreError(call, 'retention_limit_exceeded', `oversized ${how}`);

        const woken = expectTerminalSnapshot(await within('the waiter waking', waiter), 'failed');
        const snapshot = await mustSnapshot(store, id);
        for (const seen of [woken, snapshot]) {
          expect(seen.task.status).toBe('failed');
          // tower-mcp's wire values, spelled out: a client sees exactly these.
          expect(seen.error).toStrictEqual({ code: -32603, message: 'Task payload exceeded configured retention limits' });
          expect(seen.result).toBeNull();
          expect(JSON.stringify(seen), 'the rejected payload was retained').not.toContain(MARKER);
          expect(seen.task.statusMessage).toBe('Task failed: retention limit exceeded');
        }
        expect(await store.outstandingInputRequests(id)).toStrictEqual({});
        // It is terminal now, like any failed task.
        expect(await store.completeTask(id, resultText('small'))).toBe(false);
        expect(await store.failTask(id, { code: 1, message: 'small' })).toBe(false);
        // An oversized outcome for a task that has already ended is a no-op too, not a refusal.
        expect(await store.completeTask(id, sized(LIMIT + 1, (pad) => resultText(pad)))).toBe(false);
        expect(await store.failTask(id, sized(LIMIT + 1, (pad) => ({ code: -32000, message: 'late', data: pad })))).toBe(false);
        expect(await store.waitForCompletion(id)).toStrictEqual(snapshot);
      });
    }

    it('meta exactly at the limit is stored; one byte over is refused and the old meta stays', async () => {
      const store = await open({ limits });
      const { id } = await createTask(store);
      const fits = sized(LIMIT, (pad) => ({ pad }));
      expect(await store.setTaskMeta(id, fits)).toBe(true);
      expect((await mustGet(store, id))._meta).toStrictEqual(fits);
      const before = await observe(store, [id]);
      await expectStoreError(store.setTaskMeta(id, sized(LIMIT + 1, (pad) => ({ pad }))), 'retention_limit_exceeded', 'oversized meta');
      expect(await observe(store, [id])).toStrictEqual(before);
      expect(await statusOf(store, id)).toBe('working');
      // For a task there is not, it is a no-op like any other write, not a refusal.
      expect(await store.setTaskMeta(unknownId(), sized(LIMIT + 1, (pad) => ({ pad })))).toBe(false);
    });

    it('a refusal for size names the payload, its size and the limit, and nothing of its content', async () => {
      const store = await open({ limits });
      const { id } = await createTask(store);
      const over = LIMIT + 1;
      // "at least": a value certainly too large is refused from a lower bound of its size, unserialized.
      const message = (what: string) => new RegExp(`^${what.replace('.', '\\.')} is (at least )?${over} bytes as JSON, over the store's limit of ${LIMIT} bytes$`);
      const pad = (padding: string) => ({ padding: MARKER + padding });
      const refusals: [string, Promise<unknown>][] = [
        ['arguments', createTask(store, { arguments: sized(over, pad) })],
        ['meta', store.setTaskMeta(id, sized(over, pad))],
        ['message', store.setStatus(id, 'working', sized(over, (padding) => MARKER + padding))],
        ['message', store.requireInput(id, ask('k'), sized(over, (padding) => MARKER + padding))],
        ['requests.big', store.requireInput(id, { big: sized(over, (padding) => elicit(MARKER + padding)) })],
      ];
      for (const [what, call] of refusals) {
        const error = await expectStoreError(call, 'retention_limit_exceeded', what);
        expect(error.message).toMatch(message(what));
      }
      await store.requireInput(id, ask('k'));
      const answer = await expectStoreError(store.applyInputResponses(id, { k: sized(over, (padding) => accept({ padding })) }), 'retention_limit_exceeded');
      expect(answer.message).toMatch(message('responses.k'));
      const result = await expectStoreError(store.completeTask(id, sized(over, (padding) => resultText(MARKER + padding))), 'retention_limit_exceeded');
      expect(result.message).toMatch(message('result'));
      const other = await createTask(store);
      const error = await expectStoreError(store.failTask(other.id, sized(over, (padding) => ({ code: 1, message: MARKER + padding }))), 'retention_limit_exceeded');
      expect(error.message).toMatch(message('error'));
    });

    it('a status message is measured as a JSON string: at the limit it is kept, one byte over changes nothing', async () => {
      const store = await open({ limits });
      const { id } = await createTask(store);
      const fits = sized(LIMIT, (pad) => pad);
      expect(await store.setStatus(id, 'working', fits)).toBe(true);
      expect((await mustGet(store, id)).statusMessage).toBe(fits);
      const over = sized(LIMIT + 1, (pad) => pad);
      const before = await observe(store, [id]);
      await expectStoreError(store.setStatus(id, 'working', over), 'retention_limit_exceeded', 'an oversized setStatus message');
      await expectStoreError(store.requireInput(id, ask('k'), over), 'retention_limit_exceeded', 'an oversized requireInput message');
      expect(await observe(store, [id])).toStrictEqual(before);
    });

    it('a cancellation reason that would make the message too large is replaced, and the task is cancelled still', async () => {
      const store = await open({ limits });
      const kept = await createTask(store);
      const replaced = await createTask(store);
      // The message is "Cancelled: <reason>", measured as a JSON string like any message.
      const fitting = sized(LIMIT, (pad) => `Cancelled: ${pad}`).slice('Cancelled: '.length);
      expect((await store.cancelTask(kept.id, fitting))?.statusMessage).toBe(`Cancelled: ${fitting}`);
      const cancelled = await store.cancelTask(replaced.id, `${fitting}x`);
      expect(cancelled?.status).toBe('cancelled');
      expect(cancelled?.statusMessage).toBe('Task cancelled: retention limit exceeded');
      expect((await mustGet(store, replaced.id)).statusMessage).toBe('Task cancelled: retention limit exceeded');
    });

    it('each input request is measured on its own: one at the limit parks the task, one byte over changes nothing', async () => {
      const store = await open({ limits });
      const { id } = await createTask(store);
      const fits = sized(LIMIT, (pad) => elicit(pad));
      // Several requests each at the limit: the limit is per request, not per call.
      expect(await store.requireInput(id, { a: fits, b: fits })).toBe(true);
      expect(await store.outstandingInputRequests(id)).toStrictEqual({ a: fits, b: fits });

      const { id: other } = await createTask(store);
      const before = await observe(store, [other]);
      await expectStoreError(
        store.requireInput(other, { big: sized(LIMIT + 1, (pad) => elicit(pad)), small: ROOTS }),
        'retention_limit_exceeded',
        'an oversized input request',
      );
      expect(await observe(store, [other])).toStrictEqual(before);
      // The refused keys were never issued, so they are still free.
      expect(await store.requireInput(other, { big: ROOTS, small: ROOTS })).toBe(true);
    });

    it('each input response is measured on its own: one at the limit is accepted, one byte over changes nothing', async () => {
      const store = await open({ limits });
      const { id } = await createTask(store);
      await store.requireInput(id, ask('a', 'b', 'c'));
      const fits = sized(LIMIT, (pad) => accept({ pad }));
      expect(await store.applyInputResponses(id, { a: fits })).toStrictEqual({
        accepted: ['a'],
        ignored: [],
        stillOutstanding: ['b', 'c'],
        complete: false,
      });
      const before = await observe(store, [id]);
      await expectStoreError(
        store.applyInputResponses(id, { b: sized(LIMIT + 1, (pad) => accept({ pad })), c: accept() }),
        'retention_limit_exceeded',
        'an oversized input response',
      );
      expect(await observe(store, [id])).toStrictEqual(before);
      expect(await outstandingKeys(store, id)).toStrictEqual(['b', 'c']);
      expect(await store.inputResponses(id)).toStrictEqual({ a: fits });
    });

    it('the default maxPayloadBytes is 4 MiB, inclusive', async () => {
      const store = await open();
      const limit = 4 * 1024 * 1024;
      const { id } = await createTask(store, { arguments: sized(limit, (pad) => ({ pad })) });
      expect(await statusOf(store, id)).toBe('working');
      await expectStoreError(createTask(store, { arguments: sized(limit + 1, (pad) => ({ pad })) }), 'retention_limit_exceeded', '4 MiB + 1');
      expect(await listAllIds(store)).toStrictEqual([id]);
    });

    it('limits that are not positive integers are refused with invalid_input', async () => {
      await expectStoreError(open({ limits: { maxPayloadBytes: 0 } }), 'invalid_input', 'maxPayloadBytes 0');
      await expectStoreError(open({ limits: { maxPayloadBytes: 1.5 } }), 'invalid_input', 'maxPayloadBytes 1.5');
      await expectStoreError(open({ limits: { maxTasksPerOwner: -1 } }), 'invalid_input', 'maxTasksPerOwner -1');
    });
  });

  describe('retention: tasks per owner', () => {
    const open = useStores(target);

    it('each owner has its own quota; null owners share one, and "" is an owner of its own', async () => {
      const store = await open({ limits: { maxTasksPerOwner: 2 } });
      const owners: TaskOwner[] = ['alice', 'bob', null, ''];
      for (const owner of owners) {
        await createTask(store, { owner });
        await createTask(store, { owner });
      }
      const before = (await listAllIds(store)).sort();
      expect(before).toHaveLength(8);
      for (const owner of owners) {
        await expectStoreError(createTask(store, { owner }), 'retention_limit_exceeded', `a third task for ${String(owner)}`);
      }
      expect((await listAllIds(store)).sort()).toStrictEqual(before);
    });

    it('finished tasks count; expired and discarded ones do not', async () => {
      const store = await open({ limits: { maxTasksPerOwner: 2 } });
      const first = await createTask(store, { owner: 'alice' });
      const second = await createTask(store, { owner: 'alice' });
      await finish(store, first.id, 'complete');
      await finish(store, second.id, 'cancel');
      await expectStoreError(createTask(store, { owner: 'alice' }), 'retention_limit_exceeded', 'over quota with finished tasks');

      // An expired task, even one the store still holds, no longer counts.
      expect(await store.setTtl(first.id, 0)).toBe(true);
      expect(await store.taskPresence(first.id)).toStrictEqual({ state: 'expired', owner: 'alice' });
      const third = await createTask(store, { owner: 'alice', ttlMs: LONG_TTL });
      await expectStoreError(createTask(store, { owner: 'alice' }), 'retention_limit_exceeded', 'back at the quota');

      // Nor does its tombstone, once a cleanup pass has made one.
      await store.reapExpired();
      expect(await store.taskPresence(first.id)).toStrictEqual({ state: 'expired', owner: 'alice' });
      expect(await store.discardTask(third.id)).toBe(true);
      await createTask(store, { owner: 'alice' });
      await expectStoreError(createTask(store, { owner: 'alice' }), 'retention_limit_exceeded', 'back at the quota');
    });
  });

  if (caps.maxTasks) {
    describe('retention: total task count', () => {
      const open = useStores(target);

      it('maxTasks refuses a task beyond the limit until one is discarded or purged', async () => {
        const store = await open({ limits: { maxTasks: 3 }, tombstoneRetentionMs: 0 });
        const ids = [(await createTask(store)).id, (await createTask(store, { owner: 'a' })).id, (await createTask(store, { owner: 'b' })).id];
        await expectStoreError(createTask(store, { owner: 'c' }), 'retention_limit_exceeded', 'a fourth task');
        expect((await listAllIds(store)).sort()).toStrictEqual([...ids].sort());

        expect(await store.discardTask(ids[0]!)).toBe(true);
        const replacement = await createTask(store);
        await expectStoreError(createTask(store), 'retention_limit_exceeded', 'full again');

        expect(await store.setTtl(replacement.id, 0)).toBe(true);
        await store.reapExpired();
        await sleep(5);
        await store.reapExpired();
        expect(await store.taskPresence(replacement.id)).toStrictEqual({ state: 'missing' });
        await createTask(store);
      });

      it('a store full of expired tasks and tombstones makes room for a new task by dropping them', async () => {
        const store = await open({ limits: { maxTasks: 3 }, tombstoneRetentionMs: LONG_TTL });
        const tombstoned = await createTask(store, { owner: 'alice' });
        const expired = await createTask(store, { owner: 'bob' });
        const live = await createTask(store);
        expect(await store.setTtl(tombstoned.id, 0)).toBe(true);
        expect(await store.reapExpired()).toStrictEqual({ tombstoned: 1, purged: 0 });
        expect(await store.setTtl(expired.id, 0)).toBe(true);
        expect(await store.taskPresence(tombstoned.id)).toStrictEqual({ state: 'expired', owner: 'alice' });
        expect(await store.taskPresence(expired.id)).toStrictEqual({ state: 'expired', owner: 'bob' });

        const newer = await createTask(store);
        expect(await store.taskPresence(tombstoned.id)).toStrictEqual({ state: 'missing' });
        expect(await store.taskPresence(expired.id)).toStrictEqual({ state: 'missing' });
        expect((await listAllIds(store)).sort()).toStrictEqual([live.id, newer.id].sort());
        await createTask(store);
        await expectStoreError(createTask(store), 'retention_limit_exceeded', 'full of live tasks');
      });
    });
  }

  if (caps.maxRetainedBytes) {
    describe('retention: total retained bytes', () => {
      const open = useStores(target);

      it('maxRetainedBytes refuses a task that would take the store over, until space is freed', async () => {
        const store = await open({ limits: { maxRetainedBytes: 2_048, maxPayloadBytes: 1_500 } });
        const payload = sized(1_200, (pad) => ({ pad }));
        const first = await createTask(store, { arguments: payload });
        await expectStoreError(createTask(store, { arguments: payload }), 'retention_limit_exceeded', 'a second large task');
        expect(await listAllIds(store)).toStrictEqual([first.id]);
        expect(await store.discardTask(first.id)).toBe(true);
        const second = await createTask(store, { arguments: payload });
        expect(await listAllIds(store)).toStrictEqual([second.id]);
      });

      it('a result within maxPayloadBytes that would take the store over fails its task like an oversized one', async () => {
        const store = await open({ limits: { maxRetainedBytes: PROBE_BYTES, maxPayloadBytes: PROBE_BYTES } });
        const pad = (bytes: number) => sized(bytes, (padding) => ({ padding }));
        const result = (bytes: number) => sized(bytes, (padding) => resultText(padding));
        const holding = await createTask(store, { arguments: pad(6_000) });
        const finishing = await createTask(store);
        const refusal = await expectStoreError(store.completeTask(finishing.id, result(5_000)), 'retention_limit_exceeded', 'a result over the total');
        // The 6,000 bytes held, the 7 of the finishing task's arguments, and the result.
        expect(refusal.message).toBe("this would bring the store's retained payloads to 11007 bytes as JSON, over its limit of 10000 bytes");
        const failed = await store.getTaskResult(finishing.id);
        expect(failed?.task.status).toBe('failed');
        expect(failed?.error).toStrictEqual({ code: -32603, message: 'Task payload exceeded configured retention limits' });
        expect(await statusOf(store, holding.id)).toBe('working');

        // Reclaiming an expired task's payload makes room, to the exact byte.
        const reclaimable = await createTask(store, { arguments: pad(3_000) });
        const exact = await createTask(store);
        const held = await retainedBytes(store);
        expect(await store.setTtl(reclaimable.id, 0)).toBe(true);
        const room = PROBE_BYTES - (held - 3_000);
        expect(await store.completeTask(exact.id, result(room)), 'a result that fills the store exactly').toBe(true);
        expect(await retainedBytes(store)).toBe(PROBE_BYTES);
      });

      it('a store filled to the byte still takes writes that replace what a task holds with no more', async () => {
        const store = await open({ limits: { maxRetainedBytes: 1_000, maxPayloadBytes: 1_000 } });
        const pad = (bytes: number) => sized(bytes, (padding) => ({ padding }));
        const question = (bytes: number) => sized(bytes, (padding) => elicit(padding));
        const { id } = await createTask(store, { arguments: pad(400) });
        await store.requireInput(id, { a: question(300) });
        expect(await store.setTaskMeta(id, pad(300))).toBe(true);
        const full = async (what: string) => {
          const refusal = await expectStoreError(store.createTask({ toolName: 'probe' }), 'retention_limit_exceeded', what);
          expect(refusal.message).toBe("this would bring the store's retained payloads to 1004 bytes as JSON, over its limit of 1000 bytes");
        };
        await full('a task with null arguments in a store holding 1000 bytes');

        expect(await store.setTaskMeta(id, sized(300, (padding) => ({ other: padding }))), 'meta of the same size').toBe(true);
        expect(await store.requireInput(id, { b: question(300) }), 'requests of the same size').toBe(true);
        expect(await store.applyInputResponses(id, { b: sized(300, (padding) => accept({ padding })) })).toStrictEqual({ accepted: ['b'], ignored: [], stillOutstanding: [], complete: true });
        await full('after an answer the size of its question');

        await expectStoreError(store.requireInput(id, { c: question(300) }), 'retention_limit_exceeded', 'a request that would overfill');
        expect(await store.setTaskMeta(id, {})).toBe(true);
        await store.requireInput(id, { c: question(298) });
        expect(await store.completeTask(id, sized(298, (padding) => resultText(padding))), 'a result the size of the requests it drops').toBe(true);
        await full('after the completion');
      });

      it('every payload a task holds is charged, and what it stops holding is released', async () => {
        const store = await open({ limits: { maxRetainedBytes: PROBE_BYTES, maxPayloadBytes: PROBE_BYTES } });
        const held = () => retainedBytes(store);
        const pad = (bytes: number) => sized(bytes, (padding) => ({ padding }));
        expect(await held()).toBe(0);

        const task = await createTask(store, { arguments: pad(100) });
        expect(await held()).toBe(100);
        await store.setTaskMeta(task.id, pad(40));
        expect(await held()).toBe(140);
        await store.setTaskMeta(task.id, pad(30));
        expect(await held(), 'new meta replaces the old').toBe(130);

        const question = sized(200, (padding) => elicit(padding));
        const other = sized(300, (padding) => elicit(padding));
        await store.requireInput(task.id, { a: question, b: other });
        expect(await held()).toBe(630);
        await store.applyInputResponses(task.id, { a: sized(60, (padding) => accept({ padding })) });
        expect(await held(), 'an answer replaces its request').toBe(490);
        await store.requireInput(task.id, { c: question });
        expect(await held(), 'a new set of requests replaces the outstanding one').toBe(390);
        await store.completeTask(task.id, sized(90, (padding) => resultText(padding)));
        expect(await held(), 'finishing drops the outstanding requests').toBe(280);

        const failed = await createTask(store, { arguments: pad(50) });
        await store.failTask(failed.id, sized(60, (message) => ({ code: 1, message })));
        expect(await held()).toBe(390);

        const cancelled = await createTask(store, { arguments: pad(20) });
        await store.requireInput(cancelled.id, { q: question });
        await store.cancelTask(cancelled.id, 'stop');
        expect(await held(), 'a cancellation drops the outstanding requests').toBe(410);

        const overflowing = await createTask(store, { arguments: pad(35) });
        await store.setTaskMeta(overflowing.id, pad(45));
        await expectStoreError(store.completeTask(overflowing.id, sized(PROBE_BYTES + 1, (padding) => resultText(padding))), 'retention_limit_exceeded');
        expect(await held(), 'a retention failure drops every payload of the task').toBe(410);

        const expiring = await createTask(store, { arguments: pad(80) });
        expect(await held()).toBe(490);
        await store.setTtl(expiring.id, 0);
        expect(await held(), 'an expired task is reclaimed rather than refusing a write').toBe(410);

        expect(await store.discardTask(task.id)).toBe(true);
        expect(await held()).toBe(130);
        await store.discardTask(failed.id);
        await store.discardTask(cancelled.id);
        await store.discardTask(overflowing.id);
        expect(await held()).toBe(0);
      });
    });
  }
}

const PROBE_BYTES = 10_000;

/**
 * What the store holds against a `maxRetainedBytes` of {@link PROBE_BYTES}, read from the refusal
 * of a task with arguments of exactly that size: its message states the total the task would bring.
 */
async function retainedBytes(store: ReapableTaskStore): Promise<number> {
  const probe = sized(PROBE_BYTES, (padding) => ({ padding }));
  try {
    const { taskId } = await store.createTask({ toolName: 'probe', arguments: probe });
    await store.discardTask(taskId);
    return 0;
  } catch (error) {
    const total = /retained payloads to (\d+) bytes/.exec((error as Error).message);
    if (!total) throw error;
    return Number(total[1]) - PROBE_BYTES;
  }
}
