/**
 * Through MCP (SDK 1.x, Streamable HTTP), on two servers in one run:
 *
 * - ours: the server `npm start` runs (`startMcpServer`: PostgresTaskStore behind SdkTaskStore,
 *   PostgresTaskMessageQueue, the session index), on PostgreSQL;
 * - the SDK's InMemoryTaskStore and InMemoryTaskMessageQueue behind an McpServer with the same
 *   task capabilities, on the same HTTP transport.
 *
 * Both get the same benchmark tool, written against the SDK's request task store, so only the
 * stores and their wiring differ. Two figures:
 *
 * - throughput: task-augmented `tools/call` then `tasks/result`, as many as possible in a round,
 *   at each concurrency (one client session per call in flight), rounds alternating the servers;
 * - settle → result latency: a client already blocked in `tasks/result` when the tool settles its
 *   task; ours across two instances (settled on A, awaited on B, woken by NOTIFY), the in-memory
 *   store on its one instance, where the SDK polls at the task's poll interval.
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
import { migrate } from '../../src/index.js';
import { startMcpServer } from '../server/server.js';
import { scriptPool, sleep } from '../support.js';
import { distribution, formatDistribution, type Distribution } from './distribution.js';
import { alternatingRounds, formatRatio, runLoops, type Contender, type ContenderRounds } from './rounds.js';

export const MCP_POSTGRES = 'server on PostgresTaskStore';
export const MCP_IN_MEMORY = 'server on InMemoryTaskStore';

export interface McpOptions {
  concurrencies: number[];
  seconds: number;
  rounds: number;
  /** Tasks measured for the settle → result latency. */
  tasks: number;
  /** Calls in flight while measuring the latency. */
  latencyConcurrency: number;
  /** The tasks' poll interval, which the SDK's tasks/result uses on the in-memory store. */
  pollIntervalMs: number;
}

export interface McpResult {
  options: McpOptions;
  throughput: { concurrency: number; contenders: ContenderRounds[] }[];
  resultLatency: {
    /** Ours: the task settles on one instance, `tasks/result` waits on another. */
    acrossInstances: Distribution;
    /** The SDK's InMemoryTaskStore on one instance, whose `tasks/result` polls. */
    inMemoryPoll: Distribution;
  };
}

const SCHEMA = 'bench_mcp';
const TASK_TTL_MS = 60_000;
const RESULT = { content: [{ type: 'text' as const, text: 'done' }] };

/**
 * The benchmark's tools: `instant` settles its task before `tools/call` answers (throughput), and
 * `controlled` settles when `settle(taskId)` is called, recording when (latency).
 */
function benchTools(pollIntervalMs: number) {
  const pending = new Map<string, () => void>();
  const settledAt = new Map<string, number>();
  const register = (server: McpServer) => {
    server.experimental.tasks.registerToolTask('instant', { inputSchema: {} }, {
      createTask: async (_args, extra) => {
        const task = await extra.taskStore.createTask({ ttl: TASK_TTL_MS, pollInterval: pollIntervalMs });
        await extra.taskStore.storeTaskResult(task.taskId, 'completed', RESULT);
        return { task };
      },
      getTask: async (_args, extra) => extra.taskStore.getTask(extra.taskId),
      getTaskResult: async (_args, extra) => (await extra.taskStore.getTaskResult(extra.taskId)) as never,
    });
    server.experimental.tasks.registerToolTask('controlled', { inputSchema: {} }, {
      createTask: async (_args, extra) => {
        const task = await extra.taskStore.createTask({ ttl: TASK_TTL_MS, pollInterval: pollIntervalMs });
        pending.set(task.taskId, () => {
          settledAt.set(task.taskId, performance.now());
          void extra.taskStore.storeTaskResult(task.taskId, 'completed', RESULT);
        });
        return { task };
      },
      getTask: async (_args, extra) => extra.taskStore.getTask(extra.taskId),
      getTaskResult: async (_args, extra) => (await extra.taskStore.getTaskResult(extra.taskId)) as never,
    });
  };
  const settle = (taskId: string) => {
    pending.get(taskId)!();
    pending.delete(taskId);
  };
  return { register, settle, settledAt };
}

type BenchTools = ReturnType<typeof benchTools>;

async function connect(url: URL): Promise<Client> {
  const client = new Client({ name: 'bench', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(url));
  return client;
}

async function callTool(client: Client, name: string): Promise<string> {
  const { task } = await client.request(
    { method: 'tools/call', params: { name, arguments: {}, task: { ttl: TASK_TTL_MS } } },
    CreateTaskResultSchema,
  );
  return task.taskId;
}

async function fetchResult(client: Client, taskId: string): Promise<void> {
  const result = await client.request({ method: 'tasks/result', params: { taskId } }, CallToolResultSchema, { timeout: 120_000 });
  if (result.content[0]?.type !== 'text') throw new Error('tasks/result answered without the result');
}

/** The SDK's in-memory store on one instance: an McpServer per session, one shared store and queue. */
async function startInMemoryServer(tools: BenchTools): Promise<{ url: URL; close(): Promise<void> }> {
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
      tools.register(server);
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
  return {
    url: new URL(`http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`),
    async close() {
      for (const transport of sessions.values()) await transport.close();
      taskStore.cleanup();
      http.closeAllConnections();
      await new Promise((resolve) => http.close(resolve));
    },
  };
}

/** Latencies in ms: create on `creator`, wait on `waiter`, settle at a random point of a poll interval. */
async function resultLatencies(creator: Client, waiter: Client, tools: BenchTools, count: number, options: McpOptions): Promise<number[]> {
  const latencies: number[] = [];
  let next = 0;
  const worker = async () => {
    while (next < count) {
      next++;
      const taskId = await callTool(creator, 'controlled');
      const result = fetchResult(waiter, taskId);
      // Let tasks/result reach its wait, then settle somewhere within a poll interval.
      await sleep(20 + Math.random() * options.pollIntervalMs);
      tools.settle(taskId);
      await result;
      latencies.push(performance.now() - tools.settledAt.get(taskId)!);
    }
  };
  await Promise.all(Array.from({ length: options.latencyConcurrency }, worker));
  return latencies;
}

/** A server as a throughput contender: one client session per call in flight, made as needed. */
function throughputContender(name: string, url: URL, clients: Client[]): Contender {
  return {
    name,
    async measure(concurrency, seconds) {
      while (clients.length < concurrency) clients.push(await connect(url));
      let next = 0;
      return runLoops(
        async () => {
          const client = clients[next++ % concurrency]!;
          await fetchResult(client, await callTool(client, 'instant'));
        },
        concurrency,
        seconds,
      );
    },
  };
}

export async function runMcpBenchmark(connectionString: string, options: McpOptions): Promise<McpResult> {
  const admin = scriptPool(connectionString, 2);
  await admin.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
  await migrate({ pool: admin, schema: SCHEMA });
  const tools = benchTools(options.pollIntervalMs);
  const pools = [scriptPool(connectionString, 10), scriptPool(connectionString, 10)];
  const [a, b] = await Promise.all(pools.map((pool) => startMcpServer({ pool, schema: SCHEMA, port: 0, tools: [], configure: tools.register })));
  const inMemory = await startInMemoryServer(tools);
  const clients = { a: [] as Client[], inMemory: [] as Client[] };
  try {
    console.log(
      `MCP: tool calls through Streamable HTTP, ${options.rounds} rounds of ${options.seconds} s per server and concurrency; ` +
        `settle → tasks/result latency over ${options.tasks} tasks, ${options.latencyConcurrency} at a time, pollInterval ${options.pollIntervalMs} ms`,
    );
    const contenders = [throughputContender(MCP_IN_MEMORY, inMemory.url, clients.inMemory), throughputContender(MCP_POSTGRES, a!.url, clients.a)];
    const throughput: McpResult['throughput'] = [];
    for (const concurrency of options.concurrencies) {
      const results = await alternatingRounds(contenders, {
        concurrency,
        seconds: options.seconds,
        rounds: options.rounds,
        warmupSeconds: Math.min(1, options.seconds),
      });
      throughput.push({ concurrency, contenders: results });
      console.log(`  concurrency ${concurrency}`);
      for (const result of results) {
        console.log(`    ${result.name.padEnd(28)} ${result.rate.median.toFixed(1).padStart(8)} tool calls/s   ${formatRatio(result.ratio)} in-memory`);
      }
    }

    const [onA, onB, onInMemory] = await Promise.all([connect(a!.url), connect(b!.url), connect(inMemory.url)]);
    clients.a.push(onA, onB, onInMemory);
    await resultLatencies(onA, onB, tools, Math.min(10, options.tasks), options); // warm-up
    const acrossInstances = distribution(await resultLatencies(onA, onB, tools, options.tasks, options));
    const inMemoryPoll = distribution(await resultLatencies(onInMemory, onInMemory, tools, options.tasks, options));
    console.log('  settle → tasks/result');
    console.log(`    PostgresTaskStore, two instances   ${formatDistribution(acrossInstances)}`);
    console.log(`    InMemoryTaskStore, one instance    ${formatDistribution(inMemoryPoll)}`);
    return { options, throughput, resultLatency: { acrossInstances, inMemoryPoll } };
  } finally {
    await Promise.all([...clients.a, ...clients.inMemory].map((client) => client.close()));
    await Promise.all([a!.close(), b!.close(), inMemory.close()]);
    await Promise.all(pools.map((pool) => pool.end()));
    await admin.query(`DROP SCHEMA ${SCHEMA} CASCADE`);
    await admin.end();
  }
}
