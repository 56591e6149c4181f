/**
 * Authorization as SEP-2663 asks and tower-mcp defines it: a task belongs to the principal that
 * created it (plain equality, `null` for anonymous requests), and every other caller, for every
 * method, gets exactly the answer an unknown id gets. Expiry is disclosed to the owner alone.
 */
import { describe, expect, it } from 'vitest';
import { eventually } from '../support/time.js';
import { DEPLOYMENTS, useDeployments } from './support/deployments.js';
import { call } from './support/requester.js';

const NOT_FOUND = { code: -32602, message: 'Task not found' };
const EXPIRED = { code: -32602, message: 'Task has expired' };
const TASK_METHODS = [
  ['tasks/get', {}],
  ['tasks/update', { inputResponses: {} }],
  ['tasks/cancel', {}],
] as const;

async function createTask(url: string, principal: string | null, tool = 'slow_compute'): Promise<string> {
  const created = await call(url, principal, 'tools/call', { name: tool, arguments: tool === 'slow_compute' ? { seconds: 30 } : {} });
  const taskId = created.result?.['taskId'];
  if (typeof taskId !== 'string') throw new Error(`no task created: ${JSON.stringify(created)}`);
  return taskId;
}

describe.each(DEPLOYMENTS)('authorization, %s', (kind) => {
  const { deploy } = useDeployments();

  it('lets the owner act on its task and answers everyone else as if it did not exist', async () => {
    const { url } = await deploy(kind);
    const taskId = await createTask(url, 'alice');

    const owned = await call(url, 'alice', 'tasks/get', { taskId });
    expect(owned.result?.['status']).toBe('working');

    const unknown = await call(url, 'alice', 'tasks/get', { taskId: 'f'.repeat(32) });
    expect(unknown.error).toEqual(NOT_FOUND);
    for (const [method, params] of TASK_METHODS) {
      for (const stranger of ['bob', null] as const) {
        const refused = await call(url, stranger, method, { taskId, ...params });
        expect(refused, `${method} as ${JSON.stringify(stranger)}`).toEqual({ error: NOT_FOUND });
      }
    }
    // Nobody else's cancel reached it.
    expect((await call(url, 'alice', 'tasks/get', { taskId })).result?.['status']).toBe('working');
    expect((await call(url, 'alice', 'tasks/cancel', { taskId })).result).toEqual(expect.objectContaining({ resultType: 'complete' }));
  });

  it('keeps an anonymous task from a caller who presents a token, and the reverse', async () => {
    const { url } = await deploy(kind);
    const anonymous = await createTask(url, null);
    const owned = await createTask(url, 'alice');
    expect((await call(url, null, 'tasks/get', { taskId: anonymous })).result?.['taskId']).toBe(anonymous);
    expect(await call(url, 'alice', 'tasks/get', { taskId: anonymous })).toEqual({ error: NOT_FOUND });
    expect(await call(url, null, 'tasks/get', { taskId: owned })).toEqual({ error: NOT_FOUND });
    for (const taskId of [anonymous, owned]) await call(url, taskId === owned ? 'alice' : null, 'tasks/cancel', { taskId });
  });

  it('tells the owner alone that a task expired, until the store forgets it', async () => {
    const { url, stores } = await deploy(kind);
    const taskId = await createTask(url, 'alice', 'short_lived');
    await eventually('the task expiring', async () => (await call(url, 'alice', 'tasks/get', { taskId })).error !== undefined, 5_000);

    for (const [method, params] of TASK_METHODS) {
      expect(await call(url, 'alice', method, { taskId, ...params }), method).toEqual({ error: EXPIRED });
      expect(await call(url, 'bob', method, { taskId, ...params }), method).toEqual({ error: NOT_FOUND });
      expect(await call(url, null, method, { taskId, ...params }), method).toEqual({ error: NOT_FOUND });
    }

    // Once the record is gone (a purge, here a discard), the owner hears "not found" too.
    expect(await stores[0]!.discardTask(taskId)).toBe(true);
    expect(await call(url, 'alice', 'tasks/get', { taskId })).toEqual({ error: NOT_FOUND });
  });

  it('refuses task methods without the tasks extension before looking at the task', async () => {
    const { url } = await deploy(kind);
    const taskId = await createTask(url, 'alice');
    for (const [method, params] of TASK_METHODS) {
      const refused = await call(url, 'alice', method, { taskId, ...params }, { tasks: false });
      expect(refused.error?.code, method).toBe(-32021);
      expect(refused.error?.data).toEqual({ requiredCapabilities: { extensions: { 'io.modelcontextprotocol/tasks': {} } } });
    }
    await call(url, 'alice', 'tasks/cancel', { taskId });
  });
});
