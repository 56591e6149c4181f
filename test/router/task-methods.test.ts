/**
 * The router's edges, over raw JSON-RPC on one instance: what tasks/update accepts and refuses,
 * a terminal task's methods, and the tool bugs a task records instead of hanging on (a spent input
 * key asked again, a question the client cannot answer, a request for no input at all).
 */
import { inputRequired } from '@modelcontextprotocol/server';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { MemoryTaskStore } from '../../src/index.js';
import { eventually } from '../support/time.js';
import { startRouterServer, type RunningRouter } from './support/router-server.js';
import { call } from './support/requester.js';

const running: RunningRouter[] = [];
afterEach(async () => {
  for (const server of running.splice(0)) await server.close();
});

async function start(): Promise<RunningRouter> {
  const server = await startRouterServer({ store: new MemoryTaskStore() }, (router) => {
    router
      // Asks for `k`, and once `k` is answered asks for it again: a spent key.
      .tool('asks_again', { taskSupport: 'required' }, () => inputRequired({ inputRequests: { k: { method: 'roots/list' } } }))
      .tool('asks_for_sampling', { taskSupport: 'required' }, () =>
        inputRequired({ inputRequests: { model: inputRequired.createMessage({ messages: [], maxTokens: 10 }) } }),
      )
      .tool('asks_nothing', { taskSupport: 'required' }, () => inputRequired({ requestState: 'opaque' }))
      .tool('echo_answer', { taskSupport: 'required', inputSchema: z.object({}) }, (_args, { inputResponses }) =>
        inputResponses['pick'] === undefined
          ? inputRequired({ inputRequests: { pick: inputRequired.listRoots() } })
          : { content: [{ type: 'text', text: JSON.stringify(inputResponses['pick']) }] },
      );
  });
  running.push(server);
  return server;
}

async function create(url: string, name: string, args: Record<string, unknown> = {}): Promise<string> {
  const { result, error } = await call(url, null, 'tools/call', { name, arguments: args });
  if (typeof result?.['taskId'] !== 'string') throw new Error(`no task: ${JSON.stringify(error ?? result)}`);
  return result['taskId'];
}

async function settled(url: string, taskId: string): Promise<Record<string, unknown>> {
  let task: Record<string, unknown> = {};
  await eventually('the task settling', async () => {
    task = (await call(url, null, 'tasks/get', { taskId })).result ?? {};
    return ['completed', 'failed', 'cancelled'].includes(String(task['status']));
  });
  return task;
}

async function waitingFor(url: string, taskId: string): Promise<Record<string, unknown>> {
  let task: Record<string, unknown> = {};
  await eventually('the task asking for input', async () => {
    task = (await call(url, null, 'tasks/get', { taskId })).result ?? {};
    return task['status'] === 'input_required';
  });
  return task;
}

describe('tasks/update', () => {
  it('refuses a malformed answer to an outstanding request, ignores stray keys, and resumes on a good answer', async () => {
    const { url } = await start();
    const taskId = await create(url, 'echo_answer');
    expect(Object.keys((await waitingFor(url, taskId))['inputRequests'] as object)).toEqual(['pick']);

    const malformed = await call(url, null, 'tasks/update', { taskId, inputResponses: { pick: { action: 'accept' } } });
    expect(malformed.error?.code).toBe(-32602);
    expect(malformed.error?.message).toContain("'pick'");
    expect((await call(url, null, 'tasks/get', { taskId })).result?.['status']).toBe('input_required');

    const stray = await call(url, null, 'tasks/update', { taskId, inputResponses: { other: { anything: 1 } } });
    expect(stray.result).toMatchObject({ resultType: 'complete' });
    expect((await call(url, null, 'tasks/get', { taskId })).result?.['status']).toBe('input_required');

    await call(url, null, 'tasks/update', { taskId, inputResponses: { pick: { roots: [{ uri: 'file:///srv' }] } } });
    const done = await settled(url, taskId);
    expect(done['status']).toBe('completed');
    expect((done['result'] as { content: { text: string }[] }).content[0]!.text).toBe('{"roots":[{"uri":"file:///srv"}]}');
    // A late answer to a finished task is acknowledged and changes nothing.
    expect((await call(url, null, 'tasks/update', { taskId, inputResponses: { pick: { roots: [] } } })).result).toMatchObject({
      resultType: 'complete',
    });
    expect((await call(url, null, 'tasks/get', { taskId })).result?.['result']).toEqual(done['result']);
  });
});

describe('tool bugs end the task instead of stranding it', () => {
  it('fails a task whose handler asks again under a spent key', async () => {
    const { url } = await start();
    const taskId = await create(url, 'asks_again');
    await waitingFor(url, taskId);
    await call(url, null, 'tasks/update', { taskId, inputResponses: { k: { roots: [] } } });
    const failed = await settled(url, taskId);
    expect(failed['status']).toBe('failed');
    expect((failed['error'] as { message: string }).message).toContain('unique');
  });

  it('fails a task that asks for what the client did not declare, or for nothing', async () => {
    const { url } = await start();
    const sampling = await settled(url, await create(url, 'asks_for_sampling'));
    expect(sampling['status']).toBe('failed');
    expect(sampling['error']).toMatchObject({ code: -32021, data: { requiredCapabilities: { sampling: {} } } });
    const nothing = await settled(url, await create(url, 'asks_nothing'));
    expect(nothing['status']).toBe('failed');
    expect((nothing['error'] as { code: number }).code).toBe(-32603);
  });
});

describe('tools/call', () => {
  it('refuses unknown tools and arguments that do not match the schema, creating no task', async () => {
    const { url, router } = await start();
    expect((await call(url, null, 'tools/call', { name: 'nope', arguments: {} })).error?.code).toBe(-32602);
    const invalid = await call(url, null, 'tools/call', { name: 'slow_compute', arguments: { seconds: 'soon' } });
    expect(invalid.error?.code).toBe(-32602);
    expect((await router.store.listTasks()).tasks).toEqual([]);
  });

  it('ignores a legacy task parameter, and runs an optional tool synchronously without the extension', async () => {
    const { url, router } = await start();
    const legacy = await call(url, null, 'tools/call', { name: 'greet', arguments: { name: 'x' }, task: { ttl: 1000 } });
    expect(legacy.result).toMatchObject({ resultType: 'complete', content: [{ type: 'text', text: 'Hello, x!' }] });
    const plain = await call(url, null, 'tools/call', { name: 'slow_compute', arguments: { seconds: 0.1, label: 'sync' } }, { tasks: false });
    expect(plain.result).toMatchObject({ resultType: 'complete', content: [{ type: 'text', text: 'sync: computed for 0.1 s' }] });
    expect((await router.store.listTasks()).tasks).toEqual([]);
  });
});
