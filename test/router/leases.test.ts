/**
 * The router runs every tool task under its store's lease: a round that parks the task on input
 * gives the lease up, a resumable tool's task is resumed when its runner is lost (with
 * `context.resumed` set), and any other tool's task fails with `runner_lost`.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { MemoryTaskStore } from '../../src/index.js';
import { eventually } from '../support/time.js';
import { call } from './support/requester.js';
import { startRouterServer, type RunningRouter } from './support/router-server.js';

const running: { server: RunningRouter; store: MemoryTaskStore; release: () => void }[] = [];
afterEach(async () => {
  for (const { server, store, release } of running.splice(0)) {
    release();
    await server.close();
    await store.close();
  }
});

/** A router whose two blocking tools stand for work a dead runner left: one resumable, one not. */
async function start() {
  const store = new MemoryTaskStore({ leases: { heartbeatMs: 40, leaseMs: 200, rescueIntervalMs: 3_600_000 } });
  let release!: () => void;
  const blocked = new Promise<void>((resolve) => (release = resolve));
  const server = await startRouterServer({ store }, (router) => {
    for (const [name, resumable] of [['resumable_job', true], ['fragile_job', false]] as const) {
      router.tool(name, { taskSupport: 'required', resumable }, async (_args, context) => {
        if (context.resumed) {
          const { previousAttempts, lastProgress } = context.resumed;
          return { content: [{ type: 'text', text: `resumed from '${lastProgress}' after ${previousAttempts}` }] };
        }
        await context.reportProgress('step 2 of 3');
        await blocked; // the run this instance "lost"
        return { content: [{ type: 'text', text: 'the first run' }] };
      });
    }
  });
  running.push({ server, store, release });
  return { server, store };
}

async function startTask(url: string, name: string, args: Record<string, unknown> = {}): Promise<string> {
  const { result } = await call(url, null, 'tools/call', { name, arguments: args });
  return String(result?.['taskId']);
}

async function settled(url: string, taskId: string): Promise<Record<string, unknown>> {
  let task: Record<string, unknown> = {};
  await eventually(`task ${taskId} settling`, async () => {
    task = (await call(url, null, 'tasks/get', { taskId })).result ?? {};
    return ['completed', 'failed', 'cancelled'].includes(String(task['status']));
  });
  return task;
}

describe('the router under execution leases', () => {
  it('resumes a resumable tool’s task from its last progress, and fails any other tool’s with runner_lost', async () => {
    const { server, store } = await start();
    const resumable = await startTask(server.url, 'resumable_job');
    const fragile = await startTask(server.url, 'fragile_job');
    await eventually('both tasks reporting progress', async () =>
      (await Promise.all([resumable, fragile].map((id) => store.getTask(id)))).every((task) => task?.statusMessage === 'step 2 of 3'),
    );
    expect((await store.leases.leaseOf(resumable))?.runnerId).toBe(store.leases.runnerId);

    await store.leases.abandonLeases();
    expect(await store.leases.rescueLostTasks()).toEqual({ failed: 1, resumed: 1 });
    expect(await settled(server.url, resumable)).toMatchObject({
      status: 'completed',
      result: { content: [{ type: 'text', text: "resumed from 'step 2 of 3' after 1" }] },
    });
    expect(await settled(server.url, fragile)).toMatchObject({ status: 'failed', error: { code: -32603, data: { reason: 'runner_lost' } } });
  });

  it('gives the lease up while the task waits for input; the answered round runs to completion with no lease left', async () => {
    const { server, store } = await start();
    const taskId = await startTask(server.url, 'confirm_delete', { filename: 'notes.txt' });
    await eventually('the task asking', async () => (await store.getTask(taskId))?.status === 'input_required');
    await eventually('the lease given up', async () => (await store.leases.leaseOf(taskId)) === null);

    const [key] = Object.keys((await store.outstandingInputRequests(taskId)) ?? {});
    const answered = await call(server.url, null, 'tasks/update', {
      taskId,
      inputResponses: { [key!]: { action: 'accept', content: { confirm: true } } },
    });
    expect(answered.error).toBeUndefined();
    expect(await settled(server.url, taskId)).toMatchObject({ status: 'completed' });
    expect(await store.leases.leaseOf(taskId)).toBeNull();
  });
});
