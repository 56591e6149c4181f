/**
 * What `npm start` does on start, as a real MCP client of the server it just started, so that the
 * database holds one task of each kind to look at: a completed `slow_compute`, a failed
 * `failing_job`, and a `confirm_delete` left waiting for its answer (`input_required`). The client
 * stays connected, since an SDK 1.x question lives with its session; stopping the server leaves
 * that task waiting until its TTL.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';

export interface DemoRun {
  completed: string;
  failed: string;
  waiting: string;
  close(): Promise<void>;
}

const DAY_MS = 24 * 60 * 60 * 1000;

export async function runDemo(url: URL): Promise<DemoRun> {
  const client = new Client({ name: 'npm-start-demo', version: '0.1.0' }, { capabilities: { elicitation: {} } });
  await client.connect(new StreamableHTTPClientTransport(url));
  const options = { task: { ttl: DAY_MS } };
  const finish = async (name: string, args: Record<string, unknown>): Promise<string> => {
    let taskId: string | undefined;
    for await (const message of client.experimental.tasks.callToolStream({ name, arguments: args }, CallToolResultSchema, options)) {
      if (message.type === 'taskCreated') taskId = message.task.taskId;
    }
    if (!taskId) throw new Error(`${name} created no task`);
    return taskId;
  };
  const [completed, failed, waiting] = await Promise.all([
    finish('slow_compute', { seconds: 1, label: 'npm start demo' }),
    finish('failing_job', {}),
    client
      .request({ method: 'tools/call', params: { name: 'confirm_delete', arguments: { filename: 'demo.txt' }, ...options } }, CreateTaskResultSchema)
      .then((created) => created.task.taskId),
  ]);
  // The question is asked once the tool has run up to it.
  for (let tries = 0; (await client.experimental.tasks.getTask(waiting)).status !== 'input_required'; tries++) {
    if (tries > 100) throw new Error('confirm_delete never asked its question');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return { completed, failed, waiting, close: () => client.close() };
}
