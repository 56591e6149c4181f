/**
 * A closed store: every method rejects with `backend` ("the task store is closed"), whatever its
 * arguments: the id of a task the store held, an id it never issued, an id that is not an id at
 * all, and arguments that would fail validation. The closed check comes first, so a caller learns
 * that the store is gone rather than something about its input. Each call returns a rejected
 * promise; none throws synchronously.
 */
import { describe, expect, it } from 'vitest';
import type { ReapableTaskStore } from './harness.js';
import { ROOTS, accept, bad, createTask, expectStoreError, resultText, sampleError, unknownId, useStores, type ConformanceTarget } from './harness.js';

/** Every method of the contract (and reapExpired), called with `id` and otherwise valid arguments. */
function everyMethod(store: ReapableTaskStore, id: string): [string, () => Promise<unknown>][] {
  return [
    ['createTask', () => store.createTask({ toolName: 'late' })],
    ['taskOwner', () => store.taskOwner(id)],
    ['taskPresence', () => store.taskPresence(id)],
    ['getTask', () => store.getTask(id)],
    ['getTaskResult', () => store.getTaskResult(id)],
    ['waitForCompletion', () => store.waitForCompletion(id)],
    ['listTasks', () => store.listTasks()],
    ['requireInput', () => store.requireInput(id, { k: ROOTS })],
    ['outstandingInputRequests', () => store.outstandingInputRequests(id)],
    ['applyInputResponses', () => store.applyInputResponses(id, { k: accept() })],
    ['inputResponses', () => store.inputResponses(id)],
    ['resumeContext', () => store.resumeContext(id)],
    ['setStatus', () => store.setStatus(id, 'working', 'late')],
    ['setTtl', () => store.setTtl(id, 1000)],
    ['setTaskMeta', () => store.setTaskMeta(id, { late: true })],
    ['completeTask', () => store.completeTask(id, resultText('late'))],
    ['failTask', () => store.failTask(id, sampleError())],
    ['cancelTask', () => store.cancelTask(id, 'late')],
    ['discardTask', () => store.discardTask(id)],
    ['reapExpired', () => store.reapExpired()],
  ];
}

/** The same methods with arguments that would fail validation on an open store. */
function everyMethodMalformed(store: ReapableTaskStore): [string, () => Promise<unknown>][] {
  return [
    ['createTask(null)', () => store.createTask(bad(null))],
    ['waitForCompletion with a bad signal', () => store.waitForCompletion(unknownId(), bad({ signal: 'abort' }))],
    ['waitForCompletion with an aborted signal', () => store.waitForCompletion(unknownId(), { signal: AbortSignal.abort() })],
    ['listTasks({ limit: 0 })', () => store.listTasks({ limit: 0 })],
    ['requireInput with a bad request', () => store.requireInput(unknownId(), bad({ k: { method: 'nope' } }))],
    ['applyInputResponses with a bad answer', () => store.applyInputResponses(unknownId(), bad({ k: 'yes' }))],
    ['setStatus to a terminal status', () => store.setStatus(unknownId(), 'completed')],
    ['setStatus to an unknown status', () => store.setStatus(unknownId(), bad('paused'))],
    ['setTtl(-1)', () => store.setTtl(unknownId(), -1)],
    ['setTaskMeta([])', () => store.setTaskMeta(unknownId(), bad([]))],
    ['completeTask({})', () => store.completeTask(unknownId(), bad({}))],
    ['failTask({})', () => store.failTask(unknownId(), bad({}))],
    ['cancelTask(id, 42)', () => store.cancelTask(unknownId(), bad(42))],
    ['discardTask(42)', () => store.discardTask(bad(42))],
  ];
}

export function closingConformance(target: ConformanceTarget): void {
  describe('a closed store', () => {
    const open = useStores(target);

    async function closedStore(): Promise<{ store: ReapableTaskStore; held: string }> {
      const store = await open();
      const { id } = await createTask(store);
      await store.close();
      return { store, held: id };
    }

    async function refusesAll(calls: [string, () => Promise<unknown>][], what: string): Promise<void> {
      for (const [name, call] of calls) {
        let returned: Promise<unknown> | undefined;
        expect(() => {
          returned = call();
        }, `${name} ${what} threw instead of returning a rejected promise`).not.toThrow();
        const error = await expectStoreError(returned!, 'backend', `${name} ${what}`);
        expect(error.message, `${name} ${what}`).toBe('the task store is closed');
      }
    }

    it('rejects every method with backend, for a task it held and for an id it never issued', async () => {
      const { store, held } = await closedStore();
      await refusesAll(everyMethod(store, held), 'on a task the store held');
      await refusesAll(everyMethod(store, unknownId()), 'on an unknown id');
    });

    it('rejects every method with backend for ids that are not ids at all', async () => {
      const { store } = await closedStore();
      for (const id of ['bogus', '', 'A'.repeat(32), bad<string>(42), bad<string>(null)]) {
        await refusesAll(everyMethod(store, id), `on the id ${JSON.stringify(id)}`);
      }
    });

    it('rejects with backend rather than invalid_input when the arguments are malformed too', async () => {
      const { store } = await closedStore();
      await refusesAll(everyMethodMalformed(store), 'on a closed store');
    });
  });
}
