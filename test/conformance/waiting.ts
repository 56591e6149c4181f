/**
 * waitForCompletion: at once for a terminal task, otherwise until the task is terminal (its
 * snapshot) or expires (null). Only a terminal state ends a wait with a snapshot: a running
 * task's snapshot is never returned, not on abort and not on a cancellation signal alone.
 */
import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import {
  FINISHED_STATUS,
  FINISHES,
  SHORT_TTL,
  answers,
  ask,
  createTask,
  expectStoreError,
  expectTerminalSnapshot,
  finish,
  mustGet,
  resultText,
  sampleError,
  sleep,
  stillPending,
  useStores,
  within,
  type ConformanceTarget,
} from './harness.js';

export function waitingConformance(target: ConformanceTarget): void {
  describe('waiting for completion', () => {
    const open = useStores(target);

    it('returns at once with the snapshot of a task that is already terminal', async () => {
      const store = await open();
      for (const how of FINISHES) {
        const { id } = await createTask(store);
        await finish(store, id, how);
        const snapshot = expectTerminalSnapshot(await within('waitForCompletion', store.waitForCompletion(id), 1_000), FINISHED_STATUS[how]);
        expect(snapshot).toStrictEqual(await store.getTaskResult(id));
      }
    });

    for (const how of FINISHES) {
      it(`wakes a parked waiter when the task is ${FINISHED_STATUS[how]}`, async () => {
        const store = await open();
        const { id } = await createTask(store);
        const waiter = store.waitForCompletion(id);
        await sleep(20);
        await finish(store, id, how);
        const snapshot = expectTerminalSnapshot(await within('the waiter waking', waiter), FINISHED_STATUS[how]);
        switch (how) {
          case 'complete':
            expect(snapshot.result).toStrictEqual(resultText('done'));
            expect(snapshot.error).toBeNull();
            break;
          case 'fail':
            expect(snapshot.result).toBeNull();
            expect(snapshot.error).toStrictEqual(sampleError());
            break;
          case 'cancel':
            expect(snapshot.result).toBeNull();
            expect(snapshot.error).toBeNull();
            expect(snapshot.task.statusMessage).toBe('Cancelled: contract');
            break;
        }
      });
    }

    it('wakes every waiter on the task, and only that task\'s', async () => {
      const store = await open();
      const { id } = await createTask(store);
      const other = await createTask(store);
      const waiters = [store.waitForCompletion(id), store.waitForCompletion(id), store.waitForCompletion(id)];
      const otherWaiter = store.waitForCompletion(other.id);
      await sleep(20);
      await store.completeTask(id, resultText('shared'));
      const snapshots = await within('every waiter waking', Promise.all(waiters));
      for (const snapshot of snapshots) {
        expectTerminalSnapshot(snapshot, 'completed');
        expect(snapshot).toStrictEqual(snapshots[0]);
        expect(snapshot!.result).toStrictEqual(resultText('shared'));
      }
      expect(await stillPending(otherWaiter, 30)).toBe(true);
      await store.cancelTask(other.id);
      expectTerminalSnapshot(await within('the other waiter', otherWaiter), 'cancelled');
    });

    it('keeps waiting through non-terminal transitions and ends only at the terminal one', async () => {
      const store = await open();
      const { id } = await createTask(store);
      const waiter = store.waitForCompletion(id);
      await store.setStatus(id, 'working', 'step 1');
      await store.requireInput(id, ask('a'));
      await store.setTaskMeta(id, { step: 2 });
      await store.setTtl(id, 120_000);
      await store.applyInputResponses(id, answers('a'));
      await store.setStatus(id, 'working', 'step 3');
      expect(await stillPending(waiter, 60), 'a waiter returned before the task was terminal').toBe(true);

      await store.completeTask(id, resultText('done'));
      const snapshot = expectTerminalSnapshot(await within('the waiter waking', waiter), 'completed');
      expect(snapshot.task._meta).toStrictEqual({ step: 2 });
      expect(snapshot.task.ttlMs).toBe(120_000);
    });

    it('a parked task\'s waiter wakes when it is cancelled', async () => {
      const store = await open();
      const { id } = await createTask(store);
      await store.requireInput(id, ask('approval'));
      const waiter = store.waitForCompletion(id);
      await sleep(20);
      await store.cancelTask(id, 'no answer');
      expectTerminalSnapshot(await within('the waiter waking', waiter), 'cancelled');
    });

    it('a cancellation signal on a still-running task is not completion', async () => {
      // Only the store can raise a token, and every way it does also ends or expires the task, so
      // the suite fakes the notification itself: an 'abort' event on the token's signal, with the
      // task still working. A store that wakes waiters on the signal must re-read and wait on.
      const store = await open();
      const { id, token } = await createTask(store);
      const waiter = store.waitForCompletion(id);
      await sleep(10);
      token.signal.dispatchEvent(new Event('abort'));
      expect(await stillPending(waiter, 60), 'the waiter returned for a task that is still working').toBe(true);
      expect((await mustGet(store, id)).status).toBe('working');
      await store.completeTask(id, resultText('done'));
      expectTerminalSnapshot(await within('the waiter waking', waiter), 'completed');
    });

    it('answers null for an unknown task and for a task that has already expired', async () => {
      const store = await open();
      expect(await within('waitForCompletion', store.waitForCompletion('f'.repeat(32)), 1_000)).toBeNull();
      const { id } = await createTask(store, { ttlMs: 0 });
      expect(await within('waitForCompletion', store.waitForCompletion(id), 1_000)).toBeNull();
    });

    it('expiry wakes a waiter, which returns null: whether the ttl is shortened or simply runs out', async () => {
      const store = await open();
      const shortened = await createTask(store);
      const lapsing = await createTask(store, { ttlMs: SHORT_TTL });
      const waiters = [store.waitForCompletion(shortened.id), store.waitForCompletion(lapsing.id)];
      await sleep(20);
      expect(await store.setTtl(shortened.id, 0)).toBe(true);
      expect(await within('the waiters waking on expiry', Promise.all(waiters))).toStrictEqual([null, null]);
      expect(shortened.token.isCancelled).toBe(true);
      expect(lapsing.token.isCancelled).toBe(true);
    });

    it('an aborted wait rejects with the signal\'s reason and leaves the task alone', async () => {
      const store = await open();
      const { id, token } = await createTask(store);
      const controller = new AbortController();
      const reason = new Error('the client went away');
      const waiter = store.waitForCompletion(id, { signal: controller.signal });
      await sleep(20);
      controller.abort(reason);
      await expect(within('the aborted waiter settling', waiter)).rejects.toBe(reason);

      expect((await mustGet(store, id)).status).toBe('working');
      expect(token.isCancelled).toBe(false);
      // The task is still there to wait on.
      const again = store.waitForCompletion(id);
      await store.completeTask(id, resultText('done'));
      expectTerminalSnapshot(await within('a second waiter', again), 'completed');
    });

    it('an already aborted signal, or one that times out, rejects with its reason rather than returning a running task', async () => {
      const store = await open();
      const { id } = await createTask(store);
      const controller = new AbortController();
      controller.abort();
      await expect(within('an already aborted wait', store.waitForCompletion(id, { signal: controller.signal }))).rejects.toBe(controller.signal.reason);

      const timeout = AbortSignal.timeout(40);
      const timedOut = await within('a timed out wait', store.waitForCompletion(id, { signal: timeout })).then(
        (snapshot) => ({ snapshot }),
        (error: unknown) => ({ error }),
      );
      expect(timeout.reason).toBeInstanceOf(DOMException);
      expect(timedOut).toStrictEqual({ error: timeout.reason });
      expect('error' in timedOut && timedOut.error).toBe(timeout.reason);
      expect((await mustGet(store, id)).status).toBe('working');
    });

    it('a signal that is never aborted does not disturb the wait', async () => {
      const store = await open();
      const { id } = await createTask(store);
      const controller = new AbortController();
      const waiter = store.waitForCompletion(id, { signal: controller.signal });
      await sleep(20);
      await store.failTask(id, sampleError());
      expectTerminalSnapshot(await within('the waiter waking', waiter), 'failed');
      controller.abort(new Error('after the fact'));
      // Aborting after the wait ended changes nothing.
      expectTerminalSnapshot(await waiter, 'failed');
    });

    it('a discarded task\'s waiters wake with null, as for a task that no longer exists', async () => {
      const store = await open();
      const { id } = await createTask(store);
      const waiters = [store.waitForCompletion(id), store.waitForCompletion(id)];
      await sleep(20);
      expect(await store.discardTask(id)).toBe(true);
      expect(await within('the waiters waking', Promise.all(waiters))).toStrictEqual([null, null]);
    });

    it('each waiter gets a snapshot of its own: changing one changes neither the other nor the task', async () => {
      const store = await open();
      const { id } = await createTask(store);
      const waiters = [store.waitForCompletion(id), store.waitForCompletion(id)];
      await sleep(20);
      await store.completeTask(id, resultText('done'));
      const [first, second] = await within('the waiters waking', Promise.all(waiters));
      expectTerminalSnapshot(first!, 'completed').result!.content.push({ type: 'text', text: 'tampered' });
      expect(second!.result).toStrictEqual(resultText('done'));
      expect((await store.getTaskResult(id))!.result).toStrictEqual(resultText('done'));
    });

    it('a wait leaves no listener on the caller\'s signal once it ends, however it ends', async () => {
      const store = await open();
      const signal = new AbortController().signal;
      const listeners = () => getEventListeners(signal, 'abort').length;
      const settled = await createTask(store);
      const settledWait = store.waitForCompletion(settled.id, { signal });
      const discarded = await createTask(store);
      const discardedWait = store.waitForCompletion(discarded.id, { signal });
      await sleep(20);
      await store.completeTask(settled.id, resultText('done'));
      await store.discardTask(discarded.id);
      await within('the waits ending', Promise.all([settledWait, discardedWait]));
      expect(listeners()).toBe(0);

      const aborting = new AbortController();
      const aborted = await createTask(store);
      const abortedWait = store.waitForCompletion(aborted.id, { signal: aborting.signal });
      await sleep(20);
      aborting.abort(new Error('stop'));
      await expect(abortedWait).rejects.toThrow('stop');
      expect(getEventListeners(aborting.signal, 'abort')).toHaveLength(0);
    });

    it('closing the store rejects a pending wait with a backend error, and every later call too', async () => {
      const store = await open();
      const { id, token } = await createTask(store);
      const ended = expectStoreError(within('the wait ending on close', store.waitForCompletion(id)), 'backend', 'a wait pending at close');
      await sleep(20);
      await store.close();
      await ended;
      expect(token.isCancelled, 'closing a store is not cancelling its tasks').toBe(false);
      await expectStoreError(store.getTask(id), 'backend', 'getTask after close');
      await expectStoreError(store.createTask({ toolName: 'late' }), 'backend', 'createTask after close');
      await store.close();
    });
  });
}
