/**
 * `notifications/tasks` on `subscriptions/listen` streams, and cancellation across instances.
 *
 * A notification must carry exactly what `tasks/get` would return at that moment, reach a
 * subscriber whichever instance drove the change (through the store, not through the instance's
 * memory), and go only to the task's owner.
 */
import { describe, expect, it } from 'vitest';
import { within } from '../support/time.js';
import { useDeployments } from './support/deployments.js';
import { listen } from './support/listen.js';
import { call } from './support/requester.js';

/** A notification's params, without the stream's `_meta` stamp, to compare with `tasks/get`. */
function withoutMeta(params: Record<string, unknown>): Record<string, unknown> {
  const { _meta, ...task } = params;
  return task;
}

async function getTask(url: string, principal: string | null, taskId: string): Promise<Record<string, unknown>> {
  const { result, error } = await call(url, principal, 'tasks/get', { taskId });
  if (!result) throw new Error(`tasks/get failed: ${JSON.stringify(error)}`);
  const { _meta, resultType, ...task } = result;
  return task;
}

describe('notifications/tasks, one instance on MemoryTaskStore', () => {
  const { deploy } = useDeployments();

  it('acknowledges the subscription, then pushes input_required and completion as tasks/get shows them', async () => {
    const { url } = await deploy('one instance on MemoryTaskStore');
    const created = await call(url, 'alice', 'tools/call', { name: 'confirm_delete', arguments: { filename: 'a.txt' } });
    const taskId = created.result!['taskId'] as string;
    const stream = await listen(url, [taskId], { principal: 'alice' });
    try {
      const ack = await stream.next('the acknowledgement', (m) => m.method === 'notifications/subscriptions/acknowledged');
      expect(ack.params?.['notifications']).toEqual({ taskIds: [taskId] });

      const asking = await stream.task(taskId, 'input_required');
      expect(withoutMeta(asking)).toEqual(await getTask(url, 'alice', taskId));
      expect(Object.keys(asking['inputRequests'] as object)).toEqual(['confirm']);
      const subscriptionId = (ack.params?.['_meta'] as Record<string, unknown>)['io.modelcontextprotocol/subscriptionId'];
      expect(subscriptionId).toBeDefined();
      expect((asking['_meta'] as Record<string, unknown>)['io.modelcontextprotocol/subscriptionId']).toBe(subscriptionId);

      await call(url, 'alice', 'tasks/update', { taskId, inputResponses: { confirm: { action: 'accept', content: { confirm: true } } } });
      const done = await stream.task(taskId, 'completed');
      expect(withoutMeta(done)).toEqual(await getTask(url, 'alice', taskId));
      expect((done['result'] as { content: { text: string }[] }).content[0]!.text).toBe('Deleted a.txt');
    } finally {
      stream.close();
    }
  });

  it('subscribes the caller only to its own tasks, and refuses a listen without the tasks extension', async () => {
    const { url } = await deploy('one instance on MemoryTaskStore');
    const mine = (await call(url, 'alice', 'tools/call', { name: 'slow_compute', arguments: { seconds: 30 } })).result!['taskId'] as string;
    const theirs = (await call(url, 'bob', 'tools/call', { name: 'slow_compute', arguments: { seconds: 30 } })).result!['taskId'] as string;
    const stream = await listen(url, [mine, theirs, 'f'.repeat(32)], { principal: 'alice' });
    try {
      const ack = await stream.next('the acknowledgement', (m) => m.method === 'notifications/subscriptions/acknowledged');
      expect(ack.params?.['notifications']).toEqual({ taskIds: [mine] });
      await call(url, 'bob', 'tasks/cancel', { taskId: theirs });
      await call(url, 'alice', 'tasks/cancel', { taskId: mine });
      await stream.task(mine, 'cancelled');
      expect(stream.messages.some((m) => m.params?.['taskId'] === theirs)).toBe(false);
    } finally {
      stream.close();
    }

    const refused = await listen(url, [mine], { principal: 'alice', tasks: false });
    expect(refused.status).toBe(400);
    expect(refused.messages[0]?.error?.code).toBe(-32021);
  });
});

describe('across two instances on one PostgreSQL schema', () => {
  const { deploy } = useDeployments();

  it('a subscriber on one instance hears a task driven through the other ask for input, resume, settle and be cancelled', async () => {
    const { instances, stores } = await deploy('two instances on PostgresTaskStore behind a round-robin proxy');
    const [a, b] = instances.map((instance) => instance.url) as [string, string];
    const asking = (await call(b, 'alice', 'tools/call', { name: 'wait_for_cancel', arguments: {} })).result!['taskId'] as string;
    const finishing = (await call(b, 'alice', 'tools/call', { name: 'slow_compute', arguments: { seconds: 0.5 } })).result!['taskId'] as string;
    const cancelled = (await call(b, 'alice', 'tools/call', { name: 'slow_compute', arguments: { seconds: 30 } })).result!['taskId'] as string;
    const stream = await listen(a, [asking, finishing, cancelled], { principal: 'alice' });
    try {
      await stream.next('the acknowledgement', (m) => m.method === 'notifications/subscriptions/acknowledged');
      // The input request is made through B (by its store, as a handler's round would), heard on A.
      await stores[1]!.requireInput(asking, { approve: { method: 'roots/list' } });
      const input = await stream.task(asking, 'input_required');
      expect(withoutMeta(input)).toEqual(await getTask(b, 'alice', asking));
      // Answered through B, the task is working again: A hears that too, before anything settles it.
      const heardSoFar = stream.messages.length;
      await stores[1]!.applyInputResponses(asking, { approve: { roots: [] } });
      const resumed = await stream.next(
        'a working notification after input_required',
        (m) => stream.messages.indexOf(m) >= heardSoFar && m.method === 'notifications/tasks' && m.params?.['taskId'] === asking && m.params?.['status'] === 'working',
      );
      expect(withoutMeta(resumed.params!)).toEqual(await getTask(b, 'alice', asking));
      await call(b, 'alice', 'tasks/cancel', { taskId: asking });
      await call(b, 'alice', 'tasks/cancel', { taskId: cancelled });
      const cancelledNote = await stream.task(cancelled, 'cancelled');
      expect(withoutMeta(cancelledNote)).toEqual(await getTask(b, 'alice', cancelled));
      const done = await stream.task(finishing, 'completed');
      expect(withoutMeta(done)).toEqual(await getTask(b, 'alice', finishing));
    } finally {
      stream.close();
    }
  });

  it('a cancel sent to one instance stops the handler running on the other', async () => {
    const { instances, witness } = await deploy('two instances on PostgresTaskStore behind a round-robin proxy');
    const [a, b] = instances.map((instance) => instance.url) as [string, string];
    for (const [runner, canceller, expected] of [
      [a, b, 'A'],
      [b, a, 'B'],
    ] as const) {
      const taskId = (await call(runner, 'alice', 'tools/call', { name: 'wait_for_cancel', arguments: {} })).result!['taskId'] as string;
      expect(await within('the handler starting', witness.whenStarted(taskId))).toBe(expected);
      expect((await call(canceller, 'alice', 'tasks/cancel', { taskId })).result).toBeDefined();
      expect(await within('the handler seeing the cancel from the other instance', witness.whenStopped(taskId))).toBe(expected);
      expect((await getTask(runner, 'alice', taskId))['status']).toBe('cancelled');
    }
  });
});
