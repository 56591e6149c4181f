/**
 * Cancellation tokens. cancelTask raises the token createTask returned, even for a task that has
 * already finished; TTL expiry raises it too. resumeContext hands out the same cancellation domain.
 */
import { describe, expect, it } from 'vitest';
import {
  ask,
  answers,
  createTask,
  finish,
  mustGet,
  outstandingKeys,
  raised,
  resultText,
  statusOf,
  useStores,
  within,
  type ConformanceTarget,
} from './harness.js';

export function cancellationConformance(target: ConformanceTarget): void {
  describe('cancellation and tokens', () => {
    const open = useStores(target);

    it('cancelTask cancels a working task and raises its token, and no other task\'s', async () => {
      const store = await open();
      const { id, token } = await createTask(store);
      const other = await createTask(store);

      const cancelled = await store.cancelTask(id, 'user closed the tab');
      expect(cancelled?.status).toBe('cancelled');
      expect(cancelled?.statusMessage).toBe('Cancelled: user closed the tab');
      expect(await statusOf(store, id)).toBe('cancelled');
      expect(token.isCancelled).toBe(true);
      expect(token.signal.aborted).toBe(true);
      expect(token.signal.reason).toBe('cancelled');
      await within('whenCancelled on a raised token', token.whenCancelled(), 500);

      expect(other.token.isCancelled).toBe(false);
      expect(await statusOf(store, other.id)).toBe('working');
    });

    it('whenCancelled resolves for a waiter registered before the cancel', async () => {
      const store = await open();
      const { id, token } = await createTask(store);
      let woke = false;
      const waiting = token.whenCancelled().then(() => {
        woke = true;
      });
      await Promise.resolve();
      expect(woke).toBe(false);
      await store.cancelTask(id);
      await within('the token waiter waking', waiting);
      expect(woke).toBe(true);
    });

    it('a token’s listeners run once the cancel is done: a handler that reads or fails its task then finds it cancelled', async () => {
      const store = await open();
      const { id, token } = await createTask(store);
      let read: Promise<string | undefined> | undefined;
      let failed: Promise<boolean> | undefined;
      token.signal.addEventListener('abort', () => {
        read = store.getTask(id).then((task) => task?.status);
        failed = store.failTask(id, { code: -32000, message: 'stopped on cancel' });
      });
      expect((await store.cancelTask(id, 'stop'))?.status).toBe('cancelled');
      expect(await read).toBe('cancelled');
      expect(await failed).toBe(false);
      expect((await mustGet(store, id)).statusMessage).toBe('Cancelled: stop');
    });

    it('cancelTask raises the token of a finished task and returns the task unchanged', async () => {
      const store = await open();
      for (const how of ['complete', 'fail', 'cancel'] as const) {
        const { id, token } = await createTask(store);
        await finish(store, id, how);
        const before = await store.getTaskResult(id);
        const returned = await store.cancelTask(id, 'too late');
        expect(returned, how).toStrictEqual(before!.task);
        expect(token.isCancelled, `the token of a ${how} task was not raised`).toBe(true);
        expect(await store.getTaskResult(id), how).toStrictEqual(before);
      }
    });

    it('cancelTask on a parked task cancels it and clears its outstanding requests', async () => {
      const store = await open();
      const { id, token } = await createTask(store);
      await store.requireInput(id, ask('approval'));
      expect(await outstandingKeys(store, id)).toStrictEqual(['approval']);
      const cancelled = await store.cancelTask(id);
      expect(cancelled?.status).toBe('cancelled');
      expect(cancelled?.statusMessage).toBe('Task cancelled');
      expect(await store.outstandingInputRequests(id)).toStrictEqual({});
      expect(await store.applyInputResponses(id, answers('approval'))).toBeNull();
      expect(token.isCancelled).toBe(true);
    });

    it('a late result after cancellation is refused', async () => {
      const store = await open();
      const { id } = await createTask(store);
      await store.cancelTask(id);
      expect(await store.completeTask(id, resultText('finished anyway'))).toBe(false);
      expect(await store.failTask(id, { code: -1, message: 'failed anyway' })).toBe(false);
      const snapshot = await store.getTaskResult(id);
      expect(snapshot?.task.status).toBe('cancelled');
      expect(snapshot?.result).toBeNull();
      expect(snapshot?.error).toBeNull();
    });

    it('completing or failing a task does not raise its token', async () => {
      const store = await open();
      for (const how of ['complete', 'fail'] as const) {
        const { id, token } = await createTask(store);
        await finish(store, id, how);
        expect(token.isCancelled, how).toBe(false);
      }
    });

    it('every resumeContext token is the task\'s cancellation domain: cancelTask raises them all', async () => {
      const store = await open();
      const { id, token } = await createTask(store);
      await store.requireInput(id, ask('k'));
      const early = (await store.resumeContext(id))!.token;
      await store.applyInputResponses(id, answers('k'));
      const late = (await store.resumeContext(id))!.token;
      expect(early.isCancelled).toBe(false);
      expect(late.isCancelled).toBe(false);

      await store.cancelTask(id, 'stop');
      expect(token.isCancelled).toBe(true);
      expect(early.isCancelled).toBe(true);
      expect(late.isCancelled).toBe(true);
      // A token asked for after the cancel is born raised.
      const after = (await store.resumeContext(id))!.token;
      expect([after.isCancelled, after.signal.reason]).toStrictEqual([true, 'cancelled']);
    });

    it('expiry raises the resume context\'s token', async () => {
      const store = await open();
      const { id } = await createTask(store);
      const replay = (await store.resumeContext(id))!.token;
      expect(replay.isCancelled).toBe(false);
      expect(await store.setTtl(id, 0)).toBe(true);
      await raised(replay, 'expiry raising the resume token');
      expect(replay.signal.reason).toBe('expired');
    });

    it('cancelTask on an unknown task answers null', async () => {
      const store = await open();
      const { id } = await createTask(store);
      expect(await store.cancelTask('0'.repeat(32))).toBeNull();
      expect((await mustGet(store, id)).status).toBe('working');
    });
  });
}
