/**
 * The SDK's own task lifecycle tests (typescript-sdk test/integration-tests/taskLifecycle.test.ts),
 * case by case, against `McpServer` on `SdkTaskStore` over `PostgresTaskStore` and
 * `PostgresTaskMessageQueue`, with the real SDK `Client` over Streamable HTTP. The tools are
 * written as the SDK's tests write them (sdk-style-tools.ts).
 */
import { describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  CallToolResultSchema,
  CreateTaskResultSchema,
  ElicitRequestSchema,
  ErrorCode,
  McpError,
  RELATED_TASK_META_KEY,
  TaskSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { eventually, within } from '../support/time.js';
import { Gate, registerSdkStyleTools } from './sdk-style-tools.js';
import { useMcpTestbed } from './support.js';

const testbed = useMcpTestbed();

async function setup(options: { elicitation?: boolean } = {}) {
  const gate = new Gate();
  const server = await testbed.server({ tools: [], configure: (mcp) => registerSdkStyleTools(mcp, gate) });
  const client = await testbed.client(server.url, options.elicitation ? { capabilities: { elicitation: {} } } : {});
  return { gate, server, client };
}

function callTask(client: Client, name: string, args: Record<string, unknown>, ttl = 60000) {
  return client.request({ method: 'tools/call', params: { name, arguments: args, task: { ttl } } }, CreateTaskResultSchema);
}

const getTask = (client: Client, taskId: string) => client.request({ method: 'tasks/get', params: { taskId } }, TaskSchema);
const taskResult = (client: Client, taskId: string) =>
  client.request({ method: 'tasks/result', params: { taskId } }, CallToolResultSchema);

async function queuedMessages(taskId: string): Promise<number> {
  const { rows } = await testbed.pool().query('SELECT count(*)::int AS n FROM mcp_tasks.task_messages WHERE task_id = $1', [taskId]);
  return rows[0].n;
}

function expectMcpError(code: number, fragment: string) {
  return (error: unknown) => {
    expect(error).toBeInstanceOf(McpError);
    expect((error as McpError).code).toBe(code);
    expect((error as McpError).message).toContain(fragment);
    return true;
  };
}

describe('task creation and completion', () => {
  it('creates a task and returns CreateTaskResult', async () => {
    const { server, client } = await setup();
    const created = await callTask(client, 'long-task', { duration: 300, shouldFail: false });
    expect(created.task).toMatchObject({ status: 'working', ttl: 60000, pollInterval: 100 });
    expect(created.task.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const { taskId } = created.task;
    expect((await server.store.getTask(taskId))?.status).toBe('working');

    const settled = await within('the task completing', server.store.waitForCompletion(taskId));
    expect(settled?.task.status).toBe('completed');
    expect(await server.tasks.getTaskResult(taskId)).toEqual({ content: [{ type: 'text', text: 'Completed after 300ms' }] });
  });

  it('a failed task keeps its result, retrievable with tasks/result', async () => {
    const { server, client } = await setup();
    const { task } = await callTask(client, 'long-task', { duration: 100, shouldFail: true });
    expect((await within('the task failing', server.store.waitForCompletion(task.taskId)))?.task.status).toBe('failed');
    const expected = { content: [{ type: 'text', text: 'Task failed as requested' }], isError: true };
    expect(await server.tasks.getTaskResult(task.taskId)).toEqual(expected);
    expect(await taskResult(client, task.taskId)).toMatchObject(expected);
    expect((await getTask(client, task.taskId)).status).toBe('failed');
  });
});

describe('task cancellation', () => {
  it('cancels a working task and returns the cancelled task', async () => {
    const { server, client } = await setup();
    const { task } = await callTask(client, 'long-task', { duration: 5000 });
    expect((await server.store.getTask(task.taskId))?.status).toBe('working');
    const token = server.tasks.cancellationToken(task.taskId)!;

    const cancelled = await client.experimental.tasks.cancelTask(task.taskId);
    expect(cancelled).toMatchObject({ taskId: task.taskId, status: 'cancelled', ttl: 60000 });
    expect(cancelled.createdAt).toBeDefined();
    expect(cancelled.lastUpdatedAt).toBeDefined();
    expect((await server.store.getTask(task.taskId))?.status).toBe('cancelled');
    expect(token.isCancelled).toBe(true);
  });

  it('rejects cancelling a completed task with -32602', async () => {
    const { server, client } = await setup();
    const { task } = await callTask(client, 'long-task', { duration: 50 });
    await within('the task completing', server.store.waitForCompletion(task.taskId));
    await expect(client.experimental.tasks.cancelTask(task.taskId)).rejects.toSatisfy(
      expectMcpError(ErrorCode.InvalidParams, 'Cannot cancel task in terminal status'),
    );
  });
});

describe('queued messages', () => {
  it('delivers several queued messages in order', async () => {
    const { client } = await setup({ elicitation: true });
    const received: string[] = [];
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      received.push(request.params.message);
      const n = /Request (\d+)/.exec(request.params.message)?.[1];
      return { action: 'accept', content: { response: `Response ${n}` } };
    });
    const { task } = await callTask(client, 'multi-request-task', { requestCount: 3 });
    const result = await taskResult(client, task.taskId);
    expect(received).toEqual(['Request 1 of 3', 'Request 2 of 3', 'Request 3 of 3']);
    expect(result.content).toEqual([{ type: 'text', text: 'Received responses: Response 1, Response 2, Response 3' }]);
    expect((await getTask(client, task.taskId)).status).toBe('completed');
  });

  it('handles elicitation during tool execution: input_required, then tasks/result delivers the question', async () => {
    const { client } = await setup({ elicitation: true });
    let meta: Record<string, unknown> | undefined;
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      meta = request.params._meta;
      return { action: 'accept', content: { userName: 'TestUser' } };
    });
    const { task } = await callTask(client, 'input-task', {});
    expect(task.status).toBe('working');
    await eventually('the task asking for input', async () => (await getTask(client, task.taskId)).status === 'input_required');

    const result = await taskResult(client, task.taskId);
    expect(meta?.[RELATED_TASK_META_KEY]).toEqual({ taskId: task.taskId });
    expect(result.content).toEqual([{ type: 'text', text: 'Hello, TestUser!' }]);
    expect((await getTask(client, task.taskId)).status).toBe('completed');
  });

  it('cancelling before tasks/result clears the queue: no message is ever delivered', async () => {
    const { client } = await setup({ elicitation: true });
    let delivered = 0;
    client.setRequestHandler(ElicitRequestSchema, async () => {
      delivered++;
      return { action: 'accept', content: { response: 'should not be asked' } };
    });
    const { task } = await callTask(client, 'cancellable-task', { messageCount: 2 });
    await eventually('both messages queued', async () => (await queuedMessages(task.taskId)) === 2);
    expect((await getTask(client, task.taskId)).status).toBe('input_required');

    await client.request({ method: 'tasks/cancel', params: { taskId: task.taskId } }, z.object({ _meta: z.record(z.string(), z.unknown()).optional() }));
    expect((await getTask(client, task.taskId)).status).toBe('cancelled');
    expect(await queuedMessages(task.taskId)).toBe(0);
    for (let round = 0; round < 2; round++) {
      await expect(taskResult(client, task.taskId)).rejects.toThrow('has no result stored');
      expect(delivered).toBe(0);
    }
  });

  it('delivers messages as they are queued while tasks/result is blocking', async () => {
    const { gate, client } = await setup({ elicitation: true });
    const received: string[] = [];
    const answered = new Map<number, () => void>();
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      received.push(request.params.message);
      const n = Number(/Streaming message (\d+)/.exec(request.params.message)?.[1]);
      answered.get(n)?.();
      return { action: 'accept', content: { response: `Response ${n}` } };
    });
    const delivery = (n: number) => new Promise<void>((resolve) => answered.set(n, resolve));
    // A minute between polls: only a wake on each queued message can deliver it in time.
    const { task } = await callTask(client, 'streaming-task', { messageCount: 3, pollInterval: 60_000 });
    expect((await getTask(client, task.taskId)).status).toBe('working');

    const result = taskResult(client, task.taskId); // blocks from before the first message exists
    for (const n of [1, 2, 3]) {
      const delivered = delivery(n);
      expect(received).toHaveLength(n - 1); // nothing is delivered before the tool sends it
      gate.open(n);
      await within(`message ${n} reaching the blocked tasks/result`, delivered);
    }
    expect(received).toEqual(['Streaming message 1 of 3', 'Streaming message 2 of 3', 'Streaming message 3 of 3']);
    expect((await result).content).toEqual([{ type: 'text', text: 'Received all responses: Response 1, Response 2, Response 3' }]);
    expect((await getTask(client, task.taskId)).status).toBe('completed');
  });

  it('for a terminal task, delivers the queued messages, then the result; a second call only the result', async () => {
    const { gate, server, client } = await setup({ elicitation: true });
    const received: string[] = [];
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      received.push(request.params.message);
      return { action: 'accept', content: { response: 'late' } };
    });
    const { task } = await callTask(client, 'quick-complete-task', { messageCount: 2 });
    for (const n of [1, 2]) {
      gate.open(n);
      await eventually(`message ${n} queued`, async () => (await queuedMessages(task.taskId)) === n);
    }
    gate.open(0);
    expect((await within('the task completing', server.store.waitForCompletion(task.taskId)))?.task.status).toBe('completed');

    const first = await taskResult(client, task.taskId);
    expect(received).toEqual(['Quick message 1 of 2', 'Quick message 2 of 2']);
    expect(first.content).toEqual([{ type: 'text', text: 'Task completed quickly' }]);
    received.length = 0;
    const second = await taskResult(client, task.taskId);
    expect(received).toEqual([]);
    expect(second.content).toEqual([{ type: 'text', text: 'Task completed quickly' }]);
  });
});

describe('tasks/result waits on the store', () => {
  it('answers as soon as the task settles, though its poll interval is a minute', async () => {
    const { client } = await setup();
    const { task } = await callTask(client, 'long-task', { duration: 200, pollInterval: 60_000 });
    const result = await within('tasks/result answering', taskResult(client, task.taskId));
    expect(result.content).toEqual([{ type: 'text', text: 'Completed after 200ms' }]);
  });
});

describe('listing', () => {
  it('lists the tasks created', async () => {
    const { client } = await setup();
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push((await callTask(client, 'long-task', { duration: 1000 })).task.taskId);
    const { tasks } = await client.experimental.tasks.listTasks();
    expect(tasks.map((task) => task.taskId).sort()).toEqual(ids.sort());
  });

  it('pages through 15 tasks, 10 at a time', async () => {
    const { client } = await setup();
    for (let i = 0; i < 15; i++) await callTask(client, 'long-task', { duration: 5000 });
    const first = await client.experimental.tasks.listTasks();
    expect(first.tasks).toHaveLength(10);
    expect(first.nextCursor).toBeDefined();
    const second = await client.experimental.tasks.listTasks(first.nextCursor);
    expect(second.tasks).toHaveLength(5);
    expect(second.nextCursor).toBeUndefined();
  });
});

describe('errors for unknown tasks', () => {
  it('tasks/get answers -32602', async () => {
    const { client } = await setup();
    await expect(client.experimental.tasks.getTask('non-existent-task-id')).rejects.toSatisfy(
      expectMcpError(ErrorCode.InvalidParams, 'Task not found'),
    );
  });

  it('tasks/cancel answers -32602', async () => {
    const { client } = await setup();
    await expect(client.experimental.tasks.cancelTask('non-existent-task-id')).rejects.toSatisfy(
      expectMcpError(ErrorCode.InvalidParams, 'Task not found'),
    );
  });

  it('tasks/result answers -32602', async () => {
    const { client } = await setup();
    await expect(taskResult(client, 'non-existent-task-id')).rejects.toSatisfy(expectMcpError(ErrorCode.InvalidParams, 'Task not found'));
  });
});

describe('ttl', () => {
  it('the TTL the tool chose is the one the task has', async () => {
    const { client } = await setup();
    const { task } = await callTask(client, 'long-task', { duration: 100 }, 5000);
    expect(task.ttl).toBe(60000); // the tool asks for 60000 whatever the client requested
    expect((await getTask(client, task.taskId)).ttl).toBe(60000);
  });
});

describe('concurrency', () => {
  it('creates several tasks at once, with distinct ids', async () => {
    const { client } = await setup();
    const results = await Promise.all(Array.from({ length: 5 }, () => callTask(client, 'long-task', { duration: 500 })));
    expect(new Set(results.map((r) => r.task.taskId)).size).toBe(5);
    for (const result of results) expect(result.task.status).toBe('working');
  });

  it('answers concurrent reads of one task alike', async () => {
    const { client } = await setup();
    const { task } = await callTask(client, 'long-task', { duration: 2000 });
    const reads = await Promise.all(Array.from({ length: 5 }, () => getTask(client, task.taskId)));
    for (const read of reads) expect(read).toMatchObject({ taskId: task.taskId, status: 'working' });
  });
});

describe('callToolStream', () => {
  it('delivers the elicitation through callToolStream and completes the task', async () => {
    const { client } = await setup({ elicitation: true });
    let question = '';
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      question = request.params.message;
      return { action: 'accept', content: { userName: 'StreamUser' } };
    });
    const messages = [];
    for await (const message of client.experimental.tasks.callToolStream({ name: 'input-task', arguments: {} }, CallToolResultSchema, {
      task: { ttl: 60000 },
    })) {
      messages.push(message);
    }
    expect(messages[0]?.type).toBe('taskCreated');
    expect(messages.filter((m) => m.type === 'taskStatus').length).toBeGreaterThanOrEqual(1);
    const last = messages[messages.length - 1]!;
    expect(last.type).toBe('result');
    expect(question).toContain('What is your name?');
    expect(last.type === 'result' && last.result.content).toEqual([{ type: 'text', text: 'Hello, StreamUser!' }]);
  });
});
