/**
 * MCP servers and clients for the SDK integration's tests: the demo server (scripts/server) in
 * process on the test database, real SDK clients over Streamable HTTP, and a bearer scheme where
 * the token is the principal. Everything opened in a test is closed after it.
 */
import { spawn } from 'node:child_process';
import type { IncomingMessage } from 'node:http';
import { fileURLToPath } from 'node:url';
import { Client, type ClientOptions } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type pg from 'pg';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { migrate } from '../../src/index.js';
import { createPool } from '../../src/postgres/pool.js';
import { startMcpServer, type McpServerOptions, type RunningMcpServer } from '../../scripts/server/server.js';
import { findFreePort } from '../../scripts/embedded-postgres.js';
import { useTestDatabase } from '../support/test-database.js';

/** `Authorization: Bearer <principal>`: enough to tell principals apart in tests. */
export function bearerAuth(req: IncomingMessage): AuthInfo | undefined {
  const match = /^Bearer (.+)$/.exec(req.headers.authorization ?? '');
  return match ? { token: match[1]!, clientId: 'test-client', scopes: [], extra: { sub: match[1]! } } : undefined;
}

export interface McpTestbed {
  readonly connectionString: string;
  readonly schema: string;
  pool(): pg.Pool;
  /** The demo server on the test schema; `authenticate` defaults to {@link bearerAuth}. */
  server(options?: Partial<Omit<McpServerOptions, 'pool' | 'schema'>>): Promise<RunningMcpServer>;
  /** A connected client; `principal` sends it as a bearer token. */
  client(url: URL, options?: { principal?: string; capabilities?: ClientOptions['capabilities'] }): Promise<Client>;
}

export function useMcpTestbed(schema = 'mcp_tasks'): McpTestbed {
  const database = useTestDatabase();
  let shared: pg.Pool | undefined;
  const servers: RunningMcpServer[] = [];
  const clients: Client[] = [];
  const pools: pg.Pool[] = [];

  beforeAll(async () => {
    shared = createPool(database.connectionString, 20);
    await migrate({ pool: shared, schema });
  });
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((client) => client.close().catch(() => {})));
    await Promise.all(servers.splice(0).map((server) => server.close()));
    await Promise.all(pools.splice(0).map((pool) => pool.end()));
  });
  afterAll(async () => {
    await shared?.end();
  });

  return {
    get connectionString() {
      return database.connectionString;
    },
    schema,
    pool() {
      const pool = createPool(database.connectionString, 10);
      pools.push(pool);
      return pool;
    },
    async server(options = {}) {
      // A pool per server, as separate instances would have.
      const server = await startMcpServer({ port: 0, authenticate: bearerAuth, ...options, pool: this.pool(), schema });
      servers.push(server);
      return server;
    },
    async client(url, options = {}) {
      const client = new Client({ name: 'test-client', version: '1.0.0' }, { capabilities: options.capabilities ?? {} });
      const transport = new StreamableHTTPClientTransport(url, {
        ...(options.principal !== undefined ? { requestInit: { headers: { Authorization: `Bearer ${options.principal}` } } } : {}),
      });
      await client.connect(transport);
      clients.push(client);
      return client;
    },
  };
}

export interface ServerProcess {
  url: URL;
  /** Everything it printed so far. */
  output(): string;
  /** Sends the signal and resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** `npm start`'s program as its own process, on `databaseUrl`; resolves once it prints `ready:`. */
export async function spawnServer(databaseUrl: string, env: Record<string, string> = {}): Promise<ServerProcess> {
  const port = await findFreePort();
  // node itself, not the tsx binary, which runs the program in a child of its own: a SIGKILL
  // must reach the server.
  const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/server/main.ts'], {
    cwd: REPO_ROOT,
    env: { ...process.env, DATABASE_URL: databaseUrl, PORT: String(port), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const url = await new Promise<URL>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const ready = /^ready: (\S+)/m.exec(output);
      if (ready) resolve(new URL(ready[1]!));
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    void exited.then((code) => reject(new Error(`the server exited (${code}) before it was ready:\n${output}`)));
  });
  return {
    url,
    output: () => output,
    async stop(signal = 'SIGINT') {
      if (child.exitCode === null) child.kill(signal);
      return exited;
    },
  };
}
