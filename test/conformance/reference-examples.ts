/**
 * The code examples of the reference documentation (seeds/TaskStore-trait.md and
 * seeds/async_task-module.md), each as a test against the store under test.
 */
import { describe, expect, it } from 'vitest';
import {
  TaskStoreError,
  type AppliedInputResponses,
  type CallToolResult,
  type CancellationToken,
  type CreateTaskInput,
  type InputRequests,
  type InputResponses,
  type JsonRpcError,
  type ListTasksOptions,
  type TaskObject,
  type TaskPage,
  type TaskPresence,
  type TaskResumeContext,
  type TaskSnapshot,
  type TaskStatus,
  type TaskStore,
} from '../../src/index.js';
import { accept, ask, createTask, mustGet, mustSnapshot, resultText, useStores, type ConformanceTarget } from './harness.js';

/** The trait docs' decorator: counts the completions it actually applied, and forwards the rest. */
class CountingStore implements TaskStore {
  completed = 0;

  constructor(private readonly inner: TaskStore) {}

  async completeTask(taskId: string, result: CallToolResult): Promise<boolean> {
    const applied = await this.inner.completeTask(taskId, result);
    // false means the task was already terminal, expired, or gone: counting it would inflate the number.
    if (applied) this.completed += 1;
    return applied;
  }

  createTask(input: CreateTaskInput): Promise<{ taskId: string; token: CancellationToken }> {
    return this.inner.createTask(input);
  }
  taskOwner(taskId: string) {
    return this.inner.taskOwner(taskId);
  }
  taskPresence(taskId: string): Promise<TaskPresence> {
    return this.inner.taskPresence(taskId);
  }
  getTask(taskId: string): Promise<TaskObject | null> {
    return this.inner.getTask(taskId);
  }
  getTaskResult(taskId: string): Promise<TaskSnapshot | null> {
    return this.inner.getTaskResult(taskId);
  }
  waitForCompletion(taskId: string, options?: { signal?: AbortSignal }): Promise<TaskSnapshot | null> {
    return this.inner.waitForCompletion(taskId, options);
  }
  listTasks(options?: ListTasksOptions): Promise<TaskPage> {
    return this.inner.listTasks(options);
  }
  requireInput(taskId: string, requests: InputRequests, message?: string | null): Promise<boolean> {
    return this.inner.requireInput(taskId, requests, message);
  }
  outstandingInputRequests(taskId: string): Promise<InputRequests | null> {
    return this.inner.outstandingInputRequests(taskId);
  }
  applyInputResponses(taskId: string, responses: InputResponses): Promise<AppliedInputResponses | null> {
    return this.inner.applyInputResponses(taskId, responses);
  }
  inputResponses(taskId: string): Promise<InputResponses | null> {
    return this.inner.inputResponses(taskId);
  }
  resumeContext(taskId: string): Promise<TaskResumeContext | null> {
    return this.inner.resumeContext(taskId);
  }
  setStatus(taskId: string, status: TaskStatus, message?: string | null): Promise<boolean> {
    return this.inner.setStatus(taskId, status, message);
  }
  setTtl(taskId: string, ttlMs: number): Promise<boolean> {
    return this.inner.setTtl(taskId, ttlMs);
  }
  setTaskMeta(taskId: string, meta: Record<string, unknown>): Promise<boolean> {
    return this.inner.setTaskMeta(taskId, meta);
  }
  failTask(taskId: string, error: JsonRpcError): Promise<boolean> {
    return this.inner.failTask(taskId, error);
  }
  cancelTask(taskId: string, reason?: string | null): Promise<TaskObject | null> {
    return this.inner.cancelTask(taskId, reason);
  }
  discardTask(taskId: string): Promise<boolean> {
    return this.inner.discardTask(taskId);
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}

export function referenceExampleConformance(target: ConformanceTarget): void {
  describe('reference documentation examples', () => {
    const open = useStores(target);

    it('module: the store is handed around as a plain TaskStore', async () => {
      const store: TaskStore = await open();
      const { taskId } = await store.createTask({ toolName: 'build_report', arguments: {} });
      expect(taskId).toMatch(/^[0-9a-f]{32}$/);
      expect((await store.getTask(taskId))?.status).toBe('working');
    });

    it('TaskStore: a decorator that forwards every method counts only applied completions, and keeps the expired/missing distinction', async () => {
      const counting = new CountingStore(await open());
      const { taskId } = await counting.createTask({ toolName: 'build_report', arguments: {} });
      expect(await counting.completeTask(taskId, resultText('done'))).toBe(true);
      expect(await counting.completeTask(taskId, resultText('again'))).toBe(false);
      expect(counting.completed).toBe(1);

      const { taskId: expired } = await counting.createTask({ toolName: 'build_report', ttlMs: 0, owner: 'alice' });
      expect(await counting.taskPresence(expired)).toStrictEqual({ state: 'expired', owner: 'alice' });
      expect(await counting.completeTask(expired, resultText('late'))).toBe(false);
      expect(counting.completed).toBe(1);
    });

    it('requireInput: park with a message, widen by reissuing, narrow to supersede, and a spent key cannot come back', async () => {
      const store = await open();
      const { taskId: id } = await store.createTask({ toolName: 'deploy', arguments: {} });

      expect(await store.requireInput(id, ask('approval'), 'needs a decision')).toBe(true);
      const task = await mustGet(store, id);
      expect(task.status).toBe('input_required');
      expect(task.statusMessage).toBe('needs a decision');

      // Asking a second thing means reissuing the first: a key left out becomes superseded.
      expect(await store.requireInput(id, ask('approval', 'region'))).toBe(true);

      // A spent key cannot come back; this one was superseded rather than answered.
      await store.requireInput(id, ask('region'));
      const error = await store.requireInput(id, ask('approval')).then(
        () => null,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(TaskStoreError);
      expect((error as TaskStoreError).kind).toBe('invalid_transition');
    });

    it('applyInputResponses: a partial answer parks, replays and unknown keys are ignored, the last answer resumes', async () => {
      const store = await open();
      const { taskId: id } = await store.createTask({ toolName: 'deploy', arguments: {} });
      await store.requireInput(id, ask('approval', 'region'));

      let applied = await store.applyInputResponses(id, { approval: accept() });
      expect(applied!.accepted).toStrictEqual(['approval']);
      expect(applied!.stillOutstanding).toStrictEqual(['region']);
      expect(applied!.complete).toBe(false);
      expect((await mustGet(store, id)).status).toBe('input_required');

      applied = await store.applyInputResponses(id, { approval: accept(), 'never-issued': accept() });
      expect(applied!.accepted).toStrictEqual([]);
      expect(applied!.ignored).toStrictEqual(['approval', 'never-issued']);

      applied = await store.applyInputResponses(id, { region: accept() });
      expect(applied!.complete).toBe(true);
      expect((await mustGet(store, id)).status).toBe('working');
    });

    it('completeTask: a tool that ran and reported a problem is a completed task carrying the error result', async () => {
      const store = await open();
      const { taskId: id } = await store.createTask({ toolName: 'deploy', arguments: {} });
      const result: CallToolResult = { ...resultText('region eu-west-3 is not enabled'), isError: true };
      expect(await store.completeTask(id, result)).toBe(true);

      const snapshot = await mustSnapshot(store, id);
      expect(snapshot.task.status).toBe('completed');
      expect(snapshot.result?.isError).toBe(true);
      expect(snapshot.error, 'isError is a result, not a JSON-RPC error').toBeNull();
    });

    it('failTask: the error is stored whole, not flattened to a message', async () => {
      const store = await open();
      const { taskId: id } = await store.createTask({ toolName: 'deploy', arguments: {} });
      expect(await store.failTask(id, { code: -32602, message: 'unknown region', data: { field: 'region' } })).toBe(true);

      const snapshot = await mustSnapshot(store, id);
      expect(snapshot.task.status).toBe('failed');
      expect(snapshot.result).toBeNull();
      expect(snapshot.error!.code).toBe(-32602);
      expect((snapshot.error!.data as Record<string, unknown>).field).toBe('region');
    });

    it('cancelTask: cooperative cancellation raises the token, a second cancel is harmless, and a late result is refused', async () => {
      const store = await open();
      const { taskId: id, token } = await store.createTask({ toolName: 'deploy', arguments: {} });
      expect(token.isCancelled).toBe(false);

      const task = await store.cancelTask(id, 'user closed the tab');
      expect(task?.status).toBe('cancelled');
      expect(token.isCancelled).toBe(true);

      expect((await store.cancelTask(id))?.status).toBe('cancelled');
      expect(await store.completeTask(id, resultText('finished anyway'))).toBe(false);
    });

    it('resumeContext: the answers accumulate across rounds, so a re-run handler sees everything it was told', async () => {
      const store = await open();
      const { taskId: id } = await store.createTask({ toolName: 'deploy', arguments: { service: 'api' } });
      await store.requireInput(id, ask('approval'));
      await store.applyInputResponses(id, { approval: accept() });
      await store.requireInput(id, ask('region'));
      await store.applyInputResponses(id, { region: accept() });

      const resume = await store.resumeContext(id);
      expect(resume!.toolName).toBe('deploy');
      expect(resume!.arguments).toStrictEqual({ service: 'api' });
      expect(Object.keys(resume!.inputResponses).sort(), "an earlier round's answer is still there on the second resume").toStrictEqual([
        'approval',
        'region',
      ]);
    });

    it('module: task ids are unguessable, 128 random bits rather than a sequence', async () => {
      const store = await open();
      const ids = await Promise.all(Array.from({ length: 16 }, async () => (await createTask(store)).id));
      for (const id of ids) expect(id).toMatch(/^[0-9a-f]{32}$/);
      expect(new Set(ids).size).toBe(ids.length);
      // Consecutive ids share no long common prefix, as a counter or a timestamp would.
      const sorted = [...ids].sort();
      for (let i = 1; i < sorted.length; i++) {
        let common = 0;
        while (sorted[i]![common] === sorted[i - 1]![common]) common++;
        expect(common).toBeLessThan(12);
      }
    });
  });
}
