/**
 * Several PostgresTaskStore instances on one schema, each with its own pool, behave as one
 * MemoryTaskStore does in one process: waiters, tokens and races cross instance boundaries.
 */
import { describe, expect, it } from 'vitest';
import { TaskStoreError, type InputRequests } from '../src/index.js';
import { raised, resultText, within } from './conformance/harness.js';
import { listening, usePostgresStores } from './support/postgres-stores.js';

const stores = usePostgresStores();

async function twoInstances(options: Parameters<typeof stores.open>[1] = {}) {
  const schema = await stores.schema();
  const a = stores.open(schema, options);
  const b = stores.open(schema, options);
  await Promise.all([listening(a), listening(b)]);
  return { schema, a, b };
}

describe('across instances', () => {
  it('a waiter on B wakes when A completes the task', async () => {
    const { a, b } = await twoInstances();
    const { taskId } = await a.createTask({ toolName: 'build' });
    const waiting = b.waitForCompletion(taskId);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await a.completeTask(taskId, resultText('built'))).toBe(true);
    const snapshot = await within('the waiter on B waking', waiting);
    expect(snapshot?.task.status).toBe('completed');
    expect(snapshot?.result).toEqual(resultText('built'));
  });

  it('a waiter on B wakes with null when A discards the task', async () => {
    const { a, b } = await twoInstances();
    const { taskId } = await a.createTask({ toolName: 'build' });
    const waiting = b.waitForCompletion(taskId);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await a.discardTask(taskId)).toBe(true);
    expect(await within('the waiter on B waking', waiting)).toBeNull();
  });

  it('cancelTask on B raises the token A got from createTask, also for a task already completed', async () => {
    const { a, b } = await twoInstances();
    const running = await a.createTask({ toolName: 'build' });
    const finished = await a.createTask({ toolName: 'build' });
    await a.completeTask(finished.taskId, resultText('done'));

    expect((await b.cancelTask(running.taskId, 'user left'))?.status).toBe('cancelled');
    await raised(running.token, "A's token after B cancelled");
    expect((await b.cancelTask(finished.taskId))?.status).toBe('completed');
    await raised(finished.token, "A's token after B cancelled a completed task");
  });

  it("setTtl into the past on B raises A's token at once, long before A's own deadline", async () => {
    const { a, b } = await twoInstances();
    const { taskId, token } = await a.createTask({ toolName: 'build', ttlMs: 60_000 });
    expect(await b.setTtl(taskId, 0)).toBe(true);
    await raised(token, "A's token after B moved the deadline into the past");
    expect(token.signal.reason).toBe('expired');
  });

  it("expiry raises A's token while only B runs the reaper", async () => {
    const schema = await stores.schema();
    const a = stores.open(schema);
    const b = stores.open(schema, { reaper: { intervalMs: 50 } });
    await listening(a);
    const { taskId, token } = await a.createTask({ toolName: 'build', ttlMs: 200 });
    await raised(token, "A's token at the deadline");
    await within(
      "B's reaper tombstoning the task",
      new Promise<void>((resolve) => b.onReaperPass((pass) => !(pass instanceof Error) && pass.tombstoned > 0 && resolve())),
    );
    expect(await a.taskPresence(taskId)).toStrictEqual({ state: 'expired', owner: null });
  });

  it('resumeContext on B carries a token that the TTL deadline raises, and that a cancel on A raises', async () => {
    const { a, b } = await twoInstances();
    // Long enough for B's first call to come before the deadline on a loaded machine.
    const expiring = await a.createTask({ toolName: 'deploy', ttlMs: 1500 });
    const cancelled = await a.createTask({ toolName: 'deploy' });

    const onB = await b.resumeContext(expiring.taskId);
    expect(onB?.token.isCancelled).toBe(false);
    await raised(onB!.token, 'the resume token at the deadline');

    const other = await b.resumeContext(cancelled.taskId);
    await a.cancelTask(cancelled.taskId);
    await raised(other!.token, 'the resume token on B after a cancel on A');
    expect((await b.resumeContext(cancelled.taskId))?.token.isCancelled, 'a later resume sees the cancel').toBe(true);
  });

  it('exactly one of 32 concurrent completions across two instances wins, and its result is kept', async () => {
    const { a, b } = await twoInstances();
    const { taskId } = await a.createTask({ toolName: 'race' });
    const outcomes = await Promise.all(
      Array.from({ length: 32 }, (_, i) => (i % 2 ? a : b).completeTask(taskId, resultText(`winner ${i}`))),
    );
    const winners = outcomes.flatMap((won, i) => (won ? [i] : []));
    expect(winners).toHaveLength(1);
    expect((await b.getTaskResult(taskId))?.result).toEqual(resultText(`winner ${winners[0]}`));
  });

  it('concurrent completions and cancellations across instances settle the task exactly once', async () => {
    const { a, b } = await twoInstances();
    const { taskId } = await a.createTask({ toolName: 'race' });
    const calls = Array.from({ length: 16 }, (_, i) =>
      i % 2 ? a.completeTask(taskId, resultText('done')) : b.cancelTask(taskId, `stop ${i}`),
    );
    await Promise.all(calls);
    const { rows } = await stores
      .pool()
      .query(`SELECT count(*)::int AS settled FROM ${a.schema}.task_history WHERE task_id = $1 AND to_status IN ('completed', 'cancelled')`, [taskId]);
    expect(rows[0].settled).toBe(1);
  });

  it('concurrent requireInput calls spending the same key admit exactly one', async () => {
    const { a, b } = await twoInstances();
    const { taskId } = await a.createTask({ toolName: 'ask' });
    const question = (i: number): InputRequests => ({
      approval: { method: 'elicitation/create', params: { message: `question ${i}` } },
    });
    const outcomes = await Promise.allSettled(
      Array.from({ length: 16 }, (_, i) => (i % 2 ? a : b).requireInput(taskId, question(i))),
    );
    const admitted = outcomes.flatMap((outcome, i) => (outcome.status === 'fulfilled' && outcome.value ? [i] : []));
    expect(admitted).toHaveLength(1);
    for (const outcome of outcomes) {
      if (outcome.status === 'rejected') {
        expect(outcome.reason).toBeInstanceOf(TaskStoreError);
        expect((outcome.reason as TaskStoreError).kind).toBe('invalid_transition');
      }
    }
    expect(await b.outstandingInputRequests(taskId)).toEqual(question(admitted[0]!));
  });
});
