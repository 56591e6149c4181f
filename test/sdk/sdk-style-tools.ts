/**
 * Tools written the way the SDK's own tests write them (test/integration-tests/taskLifecycle.test.ts
 * in typescript-sdk): straight against `extra.taskStore` and `extra.sendRequest`, knowing nothing
 * of this package. They prove that `SdkTaskStore` is a drop-in `TaskStore` for the SDK.
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CreateTaskRequestHandlerExtra } from '@modelcontextprotocol/sdk/experimental/tasks/interfaces.js';
import type { TaskRequestOptions } from '@modelcontextprotocol/sdk/shared/protocol.js';
import { ElicitResultSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A gate a test opens to let a tool go on: events instead of sleeps. */
export class Gate {
  private opened = new Set<number>();
  private waiting = new Map<number, () => void>();
  open(step: number): void {
    this.opened.add(step);
    this.waiting.get(step)?.();
  }
  pass(step: number): Promise<void> {
    if (this.opened.has(step)) return Promise.resolve();
    return new Promise((resolve) => this.waiting.set(step, resolve));
  }
}

function ask(extra: CreateTaskRequestHandlerExtra, taskId: string, message: string, field: string) {
  return extra.sendRequest(
    {
      method: 'elicitation/create',
      params: {
        mode: 'form',
        message,
        requestedSchema: { type: 'object', properties: { [field]: { type: 'string' } }, required: [field] },
      },
    },
    ElicitResultSchema,
    { relatedTask: { taskId } } as unknown as TaskRequestOptions,
  );
}

async function store(extra: CreateTaskRequestHandlerExtra, taskId: string, status: 'completed' | 'failed', text: string) {
  const result: CallToolResult = { content: [{ type: 'text', text }], ...(status === 'failed' ? { isError: true } : {}) };
  await extra.taskStore.storeTaskResult(taskId, status, result).catch(() => {});
}

const passThrough = {
  async getTask(_args: unknown, extra: { taskId: string; taskStore: CreateTaskRequestHandlerExtra['taskStore'] }) {
    return extra.taskStore.getTask(extra.taskId);
  },
  async getTaskResult(_args: unknown, extra: { taskId: string; taskStore: CreateTaskRequestHandlerExtra['taskStore'] }) {
    return (await extra.taskStore.getTaskResult(extra.taskId)) as CallToolResult;
  },
};

export function registerSdkStyleTools(server: McpServer, gate: Gate): void {
  const tasks = server.experimental.tasks;
  tasks.registerToolTask(
    'long-task',
    { inputSchema: { duration: z.number().default(1000), shouldFail: z.boolean().default(false), pollInterval: z.number().default(100) } },
    {
      async createTask({ duration, shouldFail, pollInterval }, extra) {
        const task = await extra.taskStore.createTask({ ttl: 60000, pollInterval });
        void (async () => {
          await sleep(duration);
          if (shouldFail) await store(extra, task.taskId, 'failed', 'Task failed as requested');
          else await store(extra, task.taskId, 'completed', `Completed after ${duration}ms`);
        })();
        return { task };
      },
      ...passThrough,
    },
  );

  tasks.registerToolTask(
    'input-task',
    { inputSchema: { userName: z.string().optional() } },
    {
      async createTask({ userName }, extra) {
        const task = await extra.taskStore.createTask({ ttl: 60000, pollInterval: 100 });
        void (async () => {
          let name = userName;
          if (!name) {
            const answer = await ask(extra, task.taskId, 'What is your name?', 'userName');
            name = answer.action === 'accept' && answer.content ? String(answer.content.userName) : 'Unknown';
          }
          await store(extra, task.taskId, 'completed', `Hello, ${name}!`);
        })();
        return { task };
      },
      ...passThrough,
    },
  );

  tasks.registerToolTask(
    'multi-request-task',
    { inputSchema: { requestCount: z.number().default(3) } },
    {
      async createTask({ requestCount }, extra) {
        const task = await extra.taskStore.createTask({ ttl: 60000, pollInterval: 100 });
        void (async () => {
          const responses: string[] = [];
          for (let i = 0; i < requestCount; i++) {
            const answer = await ask(extra, task.taskId, `Request ${i + 1} of ${requestCount}`, 'response');
            if (answer.action === 'accept' && answer.content) responses.push(String(answer.content.response));
          }
          await store(extra, task.taskId, 'completed', `Received responses: ${responses.join(', ')}`);
        })();
        return { task };
      },
      ...passThrough,
    },
  );

  // Queues its requests without awaiting them and never completes: for cancellation.
  tasks.registerToolTask(
    'cancellable-task',
    { inputSchema: { messageCount: z.number().default(2) } },
    {
      async createTask({ messageCount }, extra) {
        const task = await extra.taskStore.createTask({ ttl: 60000, pollInterval: 100 });
        for (let i = 0; i < messageCount; i++) {
          ask(extra, task.taskId, `Message ${i + 1} of ${messageCount}`, 'response').catch(() => {});
        }
        return { task };
      },
      ...passThrough,
    },
  );

  // Sends its questions one at a time, each only once the test opens the gate for it.
  tasks.registerToolTask(
    'streaming-task',
    { inputSchema: { messageCount: z.number().default(3), pollInterval: z.number().default(100) } },
    {
      async createTask({ messageCount, pollInterval }, extra) {
        const task = await extra.taskStore.createTask({ ttl: 60000, pollInterval });
        void (async () => {
          const responses: string[] = [];
          for (let i = 0; i < messageCount; i++) {
            await gate.pass(i + 1);
            const answer = await ask(extra, task.taskId, `Streaming message ${i + 1} of ${messageCount}`, 'response');
            if (answer.action === 'accept' && answer.content) responses.push(String(answer.content.response));
          }
          await store(extra, task.taskId, 'completed', `Received all responses: ${responses.join(', ')}`);
        })();
        return { task };
      },
      ...passThrough,
    },
  );

  // Queues its requests without waiting for answers (request n once the test opens gate n), then
  // completes once the test opens gate 0.
  tasks.registerToolTask(
    'quick-complete-task',
    { inputSchema: { messageCount: z.number().default(2) } },
    {
      async createTask({ messageCount }, extra) {
        const task = await extra.taskStore.createTask({ ttl: 60000, pollInterval: 100 });
        void (async () => {
          for (let i = 0; i < messageCount; i++) {
            await gate.pass(i + 1);
            ask(extra, task.taskId, `Quick message ${i + 1} of ${messageCount}`, 'response').catch(() => {});
          }
          await gate.pass(0);
          await store(extra, task.taskId, 'completed', 'Task completed quickly');
        })();
        return { task };
      },
      ...passThrough,
    },
  );
}
