/**
 * The MCP server `npm start` runs, as a function tests can start too: Streamable HTTP at
 * `http://<host>:<port>/mcp`, tasks kept in PostgreSQL (store, message queue and session index on
 * one schema), one entry serving every protocol era it is given.
 */
import type { AddressInfo } from 'node:net';
import type { IncomingMessage } from 'node:http';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type pg from 'pg';
import { PostgresTaskStore, type PostgresTaskStoreOptions } from '../../src/index.js';
import { PostgresSessionTaskIndex, PostgresTaskMessageQueue, SdkTaskStore } from '../../src/sdk/index.js';
import { era2025 } from './era-2025.js';
import { closeHttpEntry, createHttpEntry, MCP_PATH, type ProtocolEra } from './http-entry.js';
import { demoTools, type ToolDefinition } from './tools.js';

export interface McpServerOptions {
  pool: pg.Pool;
  schema?: string;
  host?: string;
  /** 0 picks a free port. */
  port: number;
  store?: Omit<PostgresTaskStoreOptions, 'pool' | 'schema' | 'connectionString'>;
  tools?: ToolDefinition[];
  /** `pollInterval` the tools' tasks advertise, in ms. */
  pollIntervalMs?: number;
  authenticate?: (req: IncomingMessage) => AuthInfo | undefined;
  /** Registers more on each SDK 1.x session's server. */
  configure?: (server: McpServer) => void;
}

export interface RunningMcpServer {
  url: URL;
  store: PostgresTaskStore;
  tasks: SdkTaskStore;
  queue: PostgresTaskMessageQueue;
  /**
   * Ends sessions and streams, then the store, queue and index (the pool stays the caller's).
   * Tasks still running stay as they are in the database and expire at their TTL.
   */
  close(): Promise<void>;
}

export async function startMcpServer(options: McpServerOptions): Promise<RunningMcpServer> {
  const { pool, schema } = options;
  const store = new PostgresTaskStore({ ...options.store, pool, ...(schema ? { schema } : {}) });
  const queue = new PostgresTaskMessageQueue({ pool, ...(schema ? { schema } : {}) });
  const sessions = new PostgresSessionTaskIndex({ pool, ...(schema ? { schema } : {}) });
  const tasks = new SdkTaskStore(store, { sessions });
  const eras: ProtocolEra[] = [
    era2025({
      tasks,
      queue,
      tools: options.tools ?? demoTools,
      ...(options.pollIntervalMs !== undefined ? { pollIntervalMs: options.pollIntervalMs } : {}),
      ...(options.configure ? { configure: options.configure } : {}),
    }),
  ];
  const http = createHttpEntry({ eras, ...(options.authenticate ? { authenticate: options.authenticate } : {}) });
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(options.port, host, () => resolve());
  });
  const { port } = http.address() as AddressInfo;
  return {
    url: new URL(`http://${host}:${port}${MCP_PATH}`),
    store,
    tasks,
    queue,
    async close() {
      tasks.close();
      await closeHttpEntry(http, eras);
      await Promise.all([queue.close(), sessions.close()]);
      await store.close();
    },
  };
}
