/**
 * Concurrency: transitions are atomic. Racing writers produce exactly one outcome, and checks that
 * span a write (spent keys, quotas) hold across concurrent callers.
 */
import { describe, expect, it } from 'vitest';
import { TaskStoreError, type InputRequests } from '../../src/index.js';
import {
  accept,
  ask,
  capabilities,
  createTask,
  elicit,
  listAllIds,
  mustGet,
  mustSnapshot,
  resultText,
  sampleError,
  useStores,
  type ConformanceTarget,
} from './harness.js';

function outcomes<T>(settled: PromiseSettledResult<T>[]): { values: T[]; errors: unknown[] } {
  const values: T[] = [];
  const errors: unknown[] = [];
  for (const result of settled) {
    if (result.status === 'fulfilled') values.push(result.value);
    else errors.push(result.reason);
  }
  return { values, errors };
}

function expectAllOfKind(errors: unknown[], kind: TaskStoreError['kind']): void {
  for (const error of errors) {
    expect(error).toBeInstanceOf(TaskStoreError);
    expect((error as TaskStoreError).kind, (error as Error).message).toBe(kind);
  }
}

export function concurrencyConformance(target: ConformanceTarget): void {
  const caps = capabilities(target);

  describe('concurrency', () => {
    const open = useStores(target);

    it('16 concurrent completeTask calls on one task: exactly one applies, and its result is the one kept', async () => {
      const store = await open();
      const { id } = await createTask(store);
      const results = Array.from({ length: 16 }, (_, i) => resultText(`writer ${i}`));
      const applied = await Promise.all(results.map((result) => store.completeTask(id, result)));
      expect(applied.filter(Boolean)).toHaveLength(1);
      const winner = applied.indexOf(true);
      const snapshot = await mustSnapshot(store, id);
      expect(snapshot.task.status).toBe('completed');
      expect(snapshot.result).toStrictEqual(results[winner]);
    });

    it('completeTask, failTask and cancelTask racing on a task produce exactly one terminal outcome', async () => {
      const store = await open();
      const rounds = await Promise.all(
        Array.from({ length: 8 }, async (_, round) => {
          const { id, token } = await createTask(store);
          const [completed, failed, cancelled] = await Promise.all([
            store.completeTask(id, resultText(`round ${round}`)),
            store.failTask(id, sampleError()),
            store.cancelTask(id, 'race'),
          ]);
          return { id, token, completed, failed, cancelled };
        }),
      );
      for (const { id, token, completed, failed, cancelled } of rounds) {
        const cancelWon = cancelled?.status === 'cancelled';
        expect([completed, failed, cancelWon].filter(Boolean), `task ${id}`).toHaveLength(1);
        const snapshot = await mustSnapshot(store, id);
        expect(cancelled).not.toBeNull();
        expect(cancelled!.status).toBe(snapshot.task.status);
        if (completed) {
          expect(snapshot.task.status).toBe('completed');
          expect(snapshot.result).not.toBeNull();
          expect(snapshot.error).toBeNull();
        } else if (failed) {
          expect(snapshot.task.status).toBe('failed');
          expect(snapshot.error).toStrictEqual(sampleError());
          expect(snapshot.result).toBeNull();
        } else {
          expect(snapshot.task.status).toBe('cancelled');
          expect(snapshot.result).toBeNull();
          expect(snapshot.error).toBeNull();
        }
        // cancelTask raises the token whoever won.
        expect(token.isCancelled).toBe(true);
      }
    });

    it('concurrent requireInput calls naming one fresh key with different requests: exactly one is admitted', async () => {
      const store = await open();
      const { id } = await createTask(store);
      const calls: InputRequests[] = Array.from({ length: 8 }, (_, i) => ({ choice: elicit(`question ${i}`) }));
      const { values, errors } = outcomes(await Promise.allSettled(calls.map((requests) => store.requireInput(id, requests))));
      expect(values).toStrictEqual([true]);
      expect(errors).toHaveLength(7);
      expectAllOfKind(errors, 'invalid_transition');
      const outstanding = await store.outstandingInputRequests(id);
      expect(calls).toContainEqual(outstanding);
    });

    it('concurrent requireInput calls: repointing a key is refused whether it is still outstanding or already superseded by a racing call', async () => {
      // Each call either names "a" with another question, which is reuse whether "a" is still
      // outstanding or was just superseded, or drops "a" for a fresh key. Only the last kind wins,
      // in every interleaving.
      const store = await open();
      const { id } = await createTask(store);
      await store.requireInput(id, ask('a'));
      const calls: InputRequests[] = [
        { a: elicit('other 1') },
        { a: elicit('other 2') },
        { b: elicit('b') },
        { a: elicit('other 3'), c: elicit('c') },
      ];
      const settled = await Promise.allSettled(calls.map((requests) => store.requireInput(id, requests)));
      const { errors } = outcomes(settled);
      expectAllOfKind(errors, 'invalid_transition');
      expect(settled.map((s) => s.status)).toStrictEqual(['rejected', 'rejected', 'fulfilled', 'rejected']);
      expect(await store.outstandingInputRequests(id)).toStrictEqual({ b: elicit('b') });
    });

    it('concurrent identical reissues of an outstanding request are all admitted', async () => {
      const store = await open();
      const { id } = await createTask(store);
      await store.requireInput(id, ask('k'));
      const applied = await Promise.all(Array.from({ length: 8 }, () => store.requireInput(id, ask('k'))));
      expect(applied).toStrictEqual(Array(8).fill(true));
      expect(await store.outstandingInputRequests(id)).toStrictEqual(ask('k'));
    });

    it('concurrent answers to one key: exactly one is accepted and recorded, the task resumes once', async () => {
      const store = await open();
      const { id } = await createTask(store);
      await store.requireInput(id, ask('k'));
      const answersGiven = Array.from({ length: 8 }, (_, i) => ({ k: accept({ answer: i }) }));
      const applied = await Promise.all(answersGiven.map((responses) => store.applyInputResponses(id, responses)));
      const accepted = applied.filter((a) => a?.accepted.includes('k'));
      expect(accepted).toHaveLength(1);
      for (const result of applied) {
        expect(result).not.toBeNull();
        expect(result!.stillOutstanding).toStrictEqual([]);
        expect(result!.complete).toBe(true);
        if (result !== accepted[0]) expect(result!.ignored).toStrictEqual(['k']);
      }
      const winner = applied.indexOf(accepted[0]!);
      expect(await store.inputResponses(id)).toStrictEqual(answersGiven[winner]);
      const task = await mustGet(store, id);
      expect(task.status).toBe('working');
      expect(task.statusMessage).toBe('Task resumed');
    });

    it('concurrent createTask calls return distinct ids, all of them stored', async () => {
      const store = await open();
      const created = await Promise.all(Array.from({ length: 32 }, (_, i) => createTask(store, { owner: `owner-${i % 4}` })));
      const ids = created.map((c) => c.id);
      expect(new Set(ids).size).toBe(32);
      expect((await listAllIds(store)).sort()).toStrictEqual([...ids].sort());
    });

    it('concurrent creates for one owner never overshoot maxTasksPerOwner', async () => {
      const store = await open({ limits: { maxTasksPerOwner: 3 } });
      const settled = await Promise.allSettled(Array.from({ length: 10 }, () => createTask(store, { owner: 'alice' })));
      const { values, errors } = outcomes(settled);
      expect(values).toHaveLength(3);
      expect(errors).toHaveLength(7);
      expectAllOfKind(errors, 'retention_limit_exceeded');
      expect(await listAllIds(store, { owner: 'alice' })).toHaveLength(3);
    });

    it('concurrent cancelTask calls all return the cancelled task, with one of the reasons', async () => {
      const store = await open();
      const { id, token } = await createTask(store);
      const reasons = Array.from({ length: 8 }, (_, i) => `reason ${i}`);
      const returned = await Promise.all(reasons.map((reason) => store.cancelTask(id, reason)));
      const final = await mustGet(store, id);
      expect(reasons.map((r) => `Cancelled: ${r}`)).toContain(final.statusMessage);
      for (const task of returned) {
        expect(task?.status).toBe('cancelled');
        expect(task?.statusMessage).toBe(final.statusMessage);
      }
      expect(token.isCancelled).toBe(true);
    });

    if (caps.maxTasks) {
      it('concurrent creates never overshoot maxTasks', async () => {
        const store = await open({ limits: { maxTasks: 2 } });
        const settled = await Promise.allSettled(Array.from({ length: 8 }, (_, i) => createTask(store, { owner: `o${i}` })));
        const { values, errors } = outcomes(settled);
        expect(values).toHaveLength(2);
        expectAllOfKind(errors, 'retention_limit_exceeded');
        expect(await listAllIds(store)).toHaveLength(2);
      });
    }
  });
}
