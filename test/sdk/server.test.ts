/**
 * The MCP server `npm start` runs (scripts/server), driven by real SDK clients over Streamable
 * HTTP: its tools, tasks/list scoping, ownership, several instances on one database, and the
 * program itself as separate processes (ready line, psql command, Ctrl-C).
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  CallToolResultSchema,
  CreateTaskResultSchema,
  ElicitRequestSchema,
  ErrorCode,
  McpError,
} from '@modelcontextprotocol/sdk/types.js';
import pg from 'pg';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { confirmDelete, demoTools, slowCompute, type ToolDefinition } from '../../scripts/server/tools.js';
import { eventually, within } from '../support/time.js';
import { spawnServer, useMcpTestbed, type ServerProcess } from './support.js';

const testbed = useMcpTestbed();
const DAY_MS = 24 * 60 * 60 * 1000;

function callTask(client: Client, name: string, args: Record<string, unknown>) {
  return client.request({ method: 'tools/call', params: { name, arguments: args, task: { ttl: DAY_MS } } }, CreateTaskResultSchema);
}

async function stream(client: Client, name: string, args: Record<string, unknown>) {
  const messages = [];
  for await (const message of client.experimental.tasks.callToolStream({ name, arguments: args }, CallToolResultSchema, { task: { ttl: DAY_MS } })) {
    messages.push(message);
  }
  return messages;
}

/** The tools, with `slow_compute` telling the test when its run ends (and how). */
function observedTools() {
  let ended: (outcome: string) => void = () => {};
  const runEnded = new Promise<string>((resolve) => (ended = resolve));
  const observed: ToolDefinition = {
    ...(slowCompute as ToolDefinition),
    run: (args, context) =>
      slowCompute.run(args as never, context).then(
        (result) => (ended('returned'), result),
        (error: unknown) => (ended(`threw ${String(error)}`), Promise.reject(error)),
      ),
  };
  return { tools: demoTools.map((tool) => (tool.name === slowCompute.name ? observed : tool)), runEnded };
}

describe('the tools', () => {
  it('greet answers at once, without a task', async () => {
    const client = await testbed.client((await testbed.server()).url);
    const result = await client.callTool({ name: 'greet', arguments: { name: 'World' } });
    expect(result.content).toEqual([{ type: 'text', text: 'Hello, World!' }]);
  });

  it('slow_compute streams to its result, reporting progress in the status message', async () => {
    const server = await testbed.server();
    const client = await testbed.client(server.url);
    const { task } = await callTask(client, 'slow_compute', { seconds: 2, label: 'job' });
    await eventually('a progress message', async () => (await client.experimental.tasks.getTask(task.taskId)).statusMessage === 'job: 1 of 2 s');
    const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(result.content).toEqual([{ type: 'text', text: 'job: computed for 2 s' }]);

    const messages = await stream(client, 'slow_compute', { seconds: 0 });
    // The SDK reports a status on every poll, so how many come before the end depends on timing.
    const types = messages.map((m) => m.type);
    expect(types[0]).toBe('taskCreated');
    expect(types.at(-1)).toBe('result');
    expect(types.slice(1, -1).length).toBeGreaterThan(0);
    expect(new Set(types.slice(1, -1))).toEqual(new Set(['taskStatus']));
  });

  it('slow_compute without a task: the SDK runs the task and answers the call itself', async () => {
    const client = await testbed.client((await testbed.server()).url);
    const result = await client.callTool({ name: 'slow_compute', arguments: { seconds: 0, label: 'plain' } });
    expect(result.content).toEqual([{ type: 'text', text: 'plain: computed for 0 s' }]);
  });

  it('confirm_delete asks by elicitation while input_required, records question and answer, then completes', async () => {
    const server = await testbed.server();
    const client = await testbed.client(server.url, { capabilities: { elicitation: {} } });
    let asked = '';
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      asked = request.params.message;
      return { action: 'accept', content: { confirm: true } };
    });
    const messages = await stream(client, 'confirm_delete', { filename: 'notes.txt' });
    expect(asked).toBe('Delete notes.txt?');
    const taskId = messages[0]!.type === 'taskCreated' ? messages[0]!.task.taskId : '';
    expect(messages.some((m) => m.type === 'taskStatus' && m.task.status === 'input_required')).toBe(true);
    expect(messages.at(-1)).toMatchObject({ type: 'result', result: { content: [{ type: 'text', text: 'Deleted notes.txt' }] } });
    expect(await server.store.inputResponses(taskId)).toEqual({ confirm: { action: 'accept', content: { confirm: true } } });
  });

  it('confirm_delete without a task: the question comes on the tools/call stream itself', async () => {
    const server = await testbed.server();
    const client = await testbed.client(server.url, { capabilities: { elicitation: {} } });
    client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { confirm: true } }));
    const result = await client.callTool({ name: 'confirm_delete', arguments: { filename: 'plain.txt' } });
    expect(result.content).toEqual([{ type: 'text', text: 'Deleted plain.txt' }]);
  });

  it('multi_input asks two questions at once', async () => {
    const server = await testbed.server();
    const client = await testbed.client(server.url, { capabilities: { elicitation: {} } });
    let taskId = '';
    const pending: string[] = [];
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      pending.push(Object.keys((await server.store.outstandingInputRequests(taskId)) ?? {}).join(','));
      return { action: 'accept', content: request.params.message.includes('name') ? { name: 'Ada' } : { color: 'green' } };
    });
    const { task } = await callTask(client, 'multi_input', {});
    taskId = task.taskId;
    const result = await client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
    expect(result.content).toEqual([{ type: 'text', text: 'Ada likes green' }]);
    expect(pending[0]).toBe('color,name'); // both outstanding when the first was asked
  });

  it('failing_job ends failed, and tasks/result hands back its error result', async () => {
    const server = await testbed.server();
    const client = await testbed.client(server.url);
    const { task } = await callTask(client, 'failing_job', {});
    const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(result).toMatchObject({ isError: true, content: [{ type: 'text', text: 'failing_job: the job failed, as it always does' }] });
    expect((await client.experimental.tasks.getTask(task.taskId)).status).toBe('failed');
    // Task support 'required': a plain call gets a tool error (McpServer turns the refusal into one).
    expect(await client.callTool({ name: 'failing_job', arguments: {} })).toMatchObject({
      isError: true,
      content: [{ type: 'text', text: expect.stringContaining('requires task augmentation') }],
    });
  });

  it('protocol_error_job ends failed, and tasks/result answers with its JSON-RPC error', async () => {
    const client = await testbed.client((await testbed.server()).url);
    const { task } = await callTask(client, 'protocol_error_job', {});
    const error = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(McpError);
    expect(error).toMatchObject({ code: ErrorCode.InternalError, message: expect.stringContaining('protocol_error_job: internal error') });
    expect((await client.experimental.tasks.getTask(task.taskId)).status).toBe('failed');
  });

  it('a cancelled slow_compute stops running, on whichever instance cancels it', async () => {
    const { tools, runEnded } = observedTools();
    const a = await testbed.server({ tools });
    const b = await testbed.server();
    const onA = await testbed.client(a.url);
    const onB = await testbed.client(b.url);
    const { task } = await callTask(onA, 'slow_compute', { seconds: 60 });
    await eventually('the work starting', async () => (await onB.experimental.tasks.getTask(task.taskId)).statusMessage?.startsWith('slow_compute:') ?? false);
    expect((await onB.experimental.tasks.cancelTask(task.taskId)).status).toBe('cancelled');
    expect(await within('the tool on A stopping', runEnded)).toMatch(/^threw cancelled/);
    expect((await onA.experimental.tasks.getTask(task.taskId)).status).toBe('cancelled');
    await expect(onB.experimental.tasks.cancelTask(task.taskId)).rejects.toThrow('Cannot cancel task in terminal status');
  });
});

describe('across instances and sessions', () => {
  it('tasks/result on another instance answers the moment the task settles, not at a poll', async () => {
    const a = await testbed.server({ pollIntervalMs: 60_000 });
    const b = await testbed.server();
    const onA = await testbed.client(a.url);
    const onB = await testbed.client(b.url);
    const { task } = await callTask(onA, 'slow_compute', { seconds: 1, label: 'remote' });
    expect((await onB.experimental.tasks.getTask(task.taskId)).pollInterval).toBe(60_000);
    const result = await within('tasks/result on B', onB.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema), 5_000);
    expect(result.content).toEqual([{ type: 'text', text: 'remote: computed for 1 s' }]);
  });

  it('tasks/result answers from the snapshot its wait woke with, without reading the task again', async () => {
    const a = await testbed.server();
    const b = await testbed.server();
    const onA = await testbed.client(a.url);
    const onB = await testbed.client(b.url);
    const { task } = await callTask(onA, 'slow_compute', { seconds: 1, label: 'woken' });
    const store = b.store;
    const calls: string[] = [];
    const { getTask, getTaskResult, waitForCompletion } = { getTask: store.getTask, getTaskResult: store.getTaskResult, waitForCompletion: store.waitForCompletion };
    vi.spyOn(store, 'getTask').mockImplementation((taskId) => (calls.push('getTask'), getTask.call(store, taskId)));
    vi.spyOn(store, 'getTaskResult').mockImplementation((taskId) => (calls.push('getTaskResult'), getTaskResult.call(store, taskId)));
    vi.spyOn(store, 'waitForCompletion').mockImplementation((taskId, options) =>
      waitForCompletion.call(store, taskId, options).then((snapshot) => (calls.push('woke'), snapshot)),
    );
    const result = await within('tasks/result on B', onB.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema), 5_000);
    expect(result.content).toEqual([{ type: 'text', text: 'woken: computed for 1 s' }]);
    expect(calls).toContain('woke');
    expect(calls.slice(calls.lastIndexOf('woke') + 1)).toEqual([]);
  });

  it('tasks/result of a task that had settled already reads it once, its result included', async () => {
    const server = await testbed.server();
    const client = await testbed.client(server.url);
    const store = server.store;
    const calls: string[] = [];
    let completedReads = 0;
    const { getTask, getTaskResult } = { getTask: store.getTask, getTaskResult: store.getTaskResult };
    vi.spyOn(store, 'getTask').mockImplementation(async (taskId) => {
      calls.push('getTask');
      const read = await getTask.call(store, taskId);
      if (read?.status === 'completed') completedReads++;
      return read;
    });
    vi.spyOn(store, 'getTaskResult').mockImplementation((taskId) => (calls.push('getTaskResult'), getTaskResult.call(store, taskId)));
    const { task } = await callTask(client, 'slow_compute', { seconds: 1, label: 'settled' });
    // Having stored the result, the SDK reads the task once to notify its status: that read is its own.
    await eventually('the SDK reading the settled task', async () => completedReads === 1, 5_000);
    calls.splice(0);
    const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(result.content).toEqual([{ type: 'text', text: 'settled: computed for 1 s' }]);
    expect(calls).toEqual(['getTaskResult']);
    // Outside tasks/result a read of the task leaves the result where it is.
    calls.splice(0);
    expect((await client.experimental.tasks.getTask(task.taskId)).status).toBe('completed');
    expect(calls).toEqual(['getTask']);
  });

  it('tasks/list pages through 25 tasks of the session, and no other', async () => {
    const server = await testbed.server();
    const client = await testbed.client(server.url);
    const other = await testbed.client(server.url);
    await callTask(other, 'slow_compute', { seconds: 0 });
    const created = new Set<string>();
    for (let i = 0; i < 25; i++) created.add((await callTask(client, 'slow_compute', { seconds: 0 })).task.taskId);

    const pages: string[][] = [];
    let cursor: string | undefined;
    do {
      const page = await client.experimental.tasks.listTasks(cursor);
      pages.push(page.tasks.map((task) => task.taskId));
      cursor = page.nextCursor;
    } while (cursor);
    expect(pages.map((page) => page.length)).toEqual([10, 10, 5]);
    expect(new Set(pages.flat())).toEqual(created);
  });

  it("a client of one session cannot list another session's tasks, though it can read one by id", async () => {
    const server = await testbed.server();
    const mine = await testbed.client(server.url);
    const theirs = await testbed.client(server.url);
    const { task } = await callTask(theirs, 'slow_compute', { seconds: 0 });
    expect((await mine.experimental.tasks.listTasks()).tasks).toEqual([]);
    expect((await theirs.experimental.tasks.listTasks()).tasks.map((t) => t.taskId)).toEqual([task.taskId]);
    expect((await mine.experimental.tasks.getTask(task.taskId)).taskId).toBe(task.taskId);
  });

  it("an authenticated principal owns its tasks: listed from any session and instance, invisible to others", async () => {
    const a = await testbed.server();
    const b = await testbed.server();
    const alice = await testbed.client(a.url, { principal: 'alice' });
    const aliceLater = await testbed.client(b.url, { principal: 'alice' });
    const bob = await testbed.client(b.url, { principal: 'bob' });
    const anonymous = await testbed.client(b.url);
    const { task } = await callTask(alice, 'slow_compute', { seconds: 0 });
    expect((await aliceLater.experimental.tasks.listTasks()).tasks.map((t) => t.taskId)).toEqual([task.taskId]);
    expect((await aliceLater.experimental.tasks.getTask(task.taskId)).taskId).toBe(task.taskId);
    for (const stranger of [bob, anonymous]) {
      expect((await stranger.experimental.tasks.listTasks()).tasks).toEqual([]);
      await expect(stranger.experimental.tasks.getTask(task.taskId)).rejects.toThrow('Task not found');
      await expect(stranger.experimental.tasks.cancelTask(task.taskId)).rejects.toThrow('Task not found');
    }
    expect((await testbed.pool().query('SELECT owner FROM mcp_tasks.tasks WHERE task_id = $1', [task.taskId])).rows).toEqual([
      { owner: 'alice' },
    ]);
  });

  it('an elicitation round trip needs the session that asked: its question is queued for that session only', async () => {
    const server = await testbed.server();
    const asker = await testbed.client(server.url, { capabilities: { elicitation: {} } });
    const bystander = await testbed.client(server.url, { capabilities: { elicitation: {} } });
    let bystanderAsked = false;
    bystander.setRequestHandler(ElicitRequestSchema, async () => ((bystanderAsked = true), { action: 'decline' }));
    asker.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { confirm: false } }));
    const { task } = await callTask(asker, confirmDelete.name, { filename: 'x' });
    await eventually('the question', async () => (await asker.experimental.tasks.getTask(task.taskId)).status === 'input_required');
    // The bystander's tasks/result blocks (nothing for its session) until the asker answers.
    const bystanderResult = bystander.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    const result = await asker.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(result.content).toEqual([{ type: 'text', text: 'Kept x' }]);
    expect((await within("the bystander's tasks/result", bystanderResult)).content).toEqual(result.content);
    expect(bystanderAsked).toBe(false);
  });
});

describe('npm start, as separate processes', () => {
  const running: ServerProcess[] = [];
  afterEach(async () => {
    await Promise.all(running.splice(0).map((server) => server.stop('SIGKILL')));
  });

  it('two processes on one database serve one task; the demo leaves tasks to query; Ctrl-C stops cleanly', async () => {
    const [a, b] = await Promise.all([
      spawnServer(testbed.connectionString),
      spawnServer(testbed.connectionString, { MCP_DEMO_RUN: '0' }),
    ]);
    running.push(a, b);
    const onA = await testbed.client(a.url);
    const onB = await testbed.client(b.url);

    // Created on A; read, awaited and cancelled on B.
    const finishing = await callTask(onA, 'slow_compute', { seconds: 1, label: 'shared' });
    const running60 = await callTask(onA, 'slow_compute', { seconds: 60 });
    expect((await onB.experimental.tasks.getTask(finishing.task.taskId)).status).toBe('working');
    const result = await within('tasks/result on B', onB.experimental.tasks.getTaskResult(finishing.task.taskId, CallToolResultSchema), 10_000);
    expect(result.content).toEqual([{ type: 'text', text: 'shared: computed for 1 s' }]);
    expect((await onB.experimental.tasks.cancelTask(running60.task.taskId)).status).toBe('cancelled');
    expect((await onA.experimental.tasks.getTask(running60.task.taskId)).status).toBe('cancelled');

    // The printed psql command's query runs, and the demo run left one task of each kind.
    expect(a.output()).toContain('psql "$DATABASE_URL" -c');
    const query = /psql "\$DATABASE_URL" -c '([^']+)'/.exec(a.output())![1]!;
    const client = new pg.Client({ connectionString: testbed.connectionString });
    await client.connect();
    try {
      const history = (await client.query(query)).rows;
      expect(history.some((row) => row.tool_name === 'slow_compute' && row.to_status === 'completed')).toBe(true);
      const { rows } = await client.query(
        `SELECT tool_name, status FROM mcp_tasks.tasks WHERE task_id = ANY($1) ORDER BY tool_name`,
        [[...a.output().matchAll(/task ([0-9a-f]{32})/g)].map((match) => match[1])],
      );
      expect(rows).toEqual([
        { tool_name: 'confirm_delete', status: 'input_required' },
        { tool_name: 'failing_job', status: 'failed' },
        { tool_name: 'slow_compute', status: 'completed' },
      ]);
    } finally {
      await client.end();
    }

    expect(await Promise.all([a.stop('SIGINT'), b.stop('SIGINT')])).toEqual([0, 0]);
    expect(a.output()).toMatch(/SIGINT: stopping\nstopped\n$/);
  }, 120_000); // two programs starting on 2 shared cores
});
