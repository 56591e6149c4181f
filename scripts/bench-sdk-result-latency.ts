/**
 * `npm run bench:sdk`: how long a client blocked in `tasks/result` waits after its task settles,
 * through the MCP TypeScript SDK 1.x over Streamable HTTP, p50 / p99, in one run:
 *
 * - ours: two server instances on one database (PostgresTaskStore, SdkTaskStore,
 *   PostgresTaskMessageQueue); the task runs and settles on instance A, the client waits on B;
 * - the SDK's InMemoryTaskStore and InMemoryTaskMessageQueue, on one instance.
 *
 * Each task's tool settles it when the benchmark says so, a random moment after the client's
 * tasks/result is already waiting; latency runs from the tool's storeTaskResult call to the client
 * holding the result. Uses DATABASE_URL when set, else embedded PostgreSQL in a temporary directory.
 *
 *   npm run bench:sdk -- --tasks=100 --concurrency=4 --pollIntervalMs=1000
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { InMemoryTaskMessageQueue, InMemoryTaskStore } from '@modelcontextprotocol/sdk/experimental/tasks/stores/in-memory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema, isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { migrate } from '../src/index.js';
import { openScriptDatabase } from './database.js';
import { startMcpServer } from './server/server.js';
import { parseArgs, percentile, scriptPool, sleep } from './support.js';

const options = parseArgs({ tasks: 100, concurrency: 4, pollIntervalMs: 1000 });

/** A tool whose task settles when `settle(taskId)` is called; it records when that was. */
function controlledTool() {
  const pending = new Map<string, () => void>();
  const settledAt = new Map<string, number>();
  const register = (server: McpServer) =>
    server.experimental.tasks.registerToolTask('controlled', { inputSchema: {} }, {
      createTask: async (_args, extra) => {
        const task = await extra.taskStore.createTask({ ttl: 600_000, pollInterval: options.pollIntervalMs });
        pending.set(task.taskId, () => {
          settledAt.set(task.taskId, performance.now());
          void extra.taskStore.storeTaskResult(task.taskId, 'completed', { content: [{ type: 'text', text: 'done' }] });
        });
        return { task };
      },
      getTask: async (_args, extra) => extra.taskStore.getTask(extra.taskId),
      getTaskResult: async (_args, extra) => (await extra.taskStore.getTaskResult(extra.taskId)) as never,
    });
  const settle = (taskId: string) => {
    pending.get(taskId)!();
    pending.delete(taskId);
  };
  return { register, settle, settledAt };
}

async function connect(url: URL): Promise<Client> {
  const client = new Client({ name: 'bench', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(url));
  return client;
}

/** Latencies in ms: create on `creator`, wait on `waiter`, settle at a random point of a poll interval. */
async function measure(creator: Client, waiter: Client, tool: ReturnType<typeof controlledTool>, count = options.tasks): Promise<number[]> {
  const latencies: number[] = [];
  let next = 0;
  const worker = async () => {
    while (next < count) {
      next++;
      const { task } = await creator.request(
        { method: 'tools/call', params: { name: 'controlled', arguments: {}, task: { ttl: 600_000 } } },
        CreateTaskResultSchema,
      );
      const result = waiter.request({ method: 'tasks/result', params: { taskId: task.taskId } }, CallToolResultSchema, { timeout: 120_000 });
      // Let tasks/result reach its wait, then settle somewhere within a poll interval.
      await sleep(20 + Math.random() * options.pollIntervalMs);
      tool.settle(task.taskId);
      await result;
      latencies.push(performance.now() - tool.settledAt.get(task.taskId)!);
    }
  };
  await Promise.all(Array.from({ length: options.concurrency }, worker));
  return latencies;
}

async function ours(connectionString: string): Promise<number[]> {
  const schema = `bench_sdk_${process.pid}`;
  const admin = scriptPool(connectionString, 2);
  await migrate({ pool: admin, schema });
  const tool = controlledTool();
  const pools = [scriptPool(connectionString, 10), scriptPool(connectionString, 10)];
  const [a, b] = await Promise.all(pools.map((pool) => startMcpServer({ pool, schema, port: 0, tools: [], configure: tool.register })));
  const [onA, onB] = await Promise.all([connect(a!.url), connect(b!.url)]);
  try {
    await measure(onA, onB, tool, 10); // warm-up: connections, prepared statements
    return await measure(onA, onB, tool);
  } finally {
    await Promise.all([onA.close(), onB.close()]);
    await Promise.all([a!.close(), b!.close()]);
    await Promise.all(pools.map((pool) => pool.end()));
    await admin.query(`DROP SCHEMA ${schema} CASCADE`);
    await admin.end();
  }
}

async function sdkInMemory(): Promise<number[]> {
  const tool = controlledTool();
  const taskStore = new InMemoryTaskStore();
  const taskMessageQueue = new InMemoryTaskMessageQueue();
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const http = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
    const sessionId = req.headers['mcp-session-id'];
    let transport = typeof sessionId === 'string' ? sessions.get(sessionId) : undefined;
    if (!transport && isInitializeRequest(body)) {
      const server = new McpServer(
        { name: 'bench-in-memory', version: '1.0.0' },
        { capabilities: { tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } }, taskStore, taskMessageQueue },
      );
      tool.register(server);
      const created: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => void sessions.set(id, created),
      });
      await server.connect(created);
      transport = created;
    }
    if (!transport) return void res.writeHead(400).end();
    await transport.handleRequest(req, res, body);
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const url = new URL(`http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`);
  const client = await connect(url);
  try {
    return await measure(client, client, tool);
  } finally {
    await client.close();
    for (const transport of sessions.values()) await transport.close();
    taskStore.cleanup();
    http.closeAllConnections();
    await new Promise((resolve) => http.close(resolve));
  }
}

const database = await openScriptDatabase();
try {
  console.log(`database: ${database.description}`);
  console.log(`${options.tasks} tasks per contender, ${options.concurrency} at a time, pollInterval ${options.pollIntervalMs} ms\n`);
  const results: [string, number[]][] = [
    ['ours: PostgresTaskStore, settled on A, awaited on B', await ours(database.connectionString)],
    ['SDK InMemoryTaskStore, one instance', await sdkInMemory()],
  ];
  const row = (name: string, p50: string, p99: string) => console.log(`${name.padEnd(54)} ${p50.padStart(10)} ${p99.padStart(10)}`);
  row('settle → tasks/result response', 'p50 ms', 'p99 ms');
  for (const [name, samples] of results) row(name, percentile(samples, 50).toFixed(1), percentile(samples, 99).toFixed(1));
  const [[, mine], [, theirs]] = results as [[string, number[]], [string, number[]]];
  console.log(`\nin-memory / ours: p50 ${(percentile(theirs, 50) / percentile(mine, 50)).toFixed(0)}×, p99 ${(percentile(theirs, 99) / percentile(mine, 99)).toFixed(0)}×`);
} finally {
  await database.stop();
}
