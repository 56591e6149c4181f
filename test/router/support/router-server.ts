/**
 * A real HTTP server serving a router on 127.0.0.1 and a free port, the way a user mounts it:
 * `createTaskHttpHandler` behind `toNodeHandler`. `Authorization: Bearer <name>` stands
 * for a verified token whose subject is `<name>` (a test verifier: the name is the principal).
 */
import { createServer, type IncomingMessage, type Server as HttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { toNodeHandler } from '@modelcontextprotocol/node';
import type { AuthInfo } from '@modelcontextprotocol/server';
import type { TaskStore } from '../../../src/index.js';
import { createTaskHttpHandler, type TaskHttpHandler, type TaskRouter } from '../../../src/router/index.js';
import { createDemoRouter } from '../../../scripts/server/era-2026.js';
import { demoTools } from '../../../scripts/server/tools.js';

export interface RunningRouter {
  readonly url: string;
  readonly router: TaskRouter;
  readonly handler: TaskHttpHandler;
  /** Stops accepting, ends streams, waits for running handler rounds. */
  close(): Promise<void>;
}

export function testAuthInfo(request: IncomingMessage): AuthInfo | undefined {
  const header = request.headers.authorization;
  const match = header?.match(/^Bearer (.+)$/);
  if (!match) return undefined;
  const subject = match[1]!;
  return { token: subject, clientId: 'test-client', scopes: [], extra: { sub: subject } };
}

/**
 * Starts the router `npm start` serves for protocol 2026-07-28 (the demo tools), plus whatever
 * `configure` adds, on its own HTTP server over `store`.
 */
export async function startRouterServer(
  options: { store: TaskStore; pollIntervalMs?: number },
  configure?: (router: TaskRouter) => void,
): Promise<RunningRouter> {
  const router = createDemoRouter({ ...options, tools: demoTools, ...(configure !== undefined && { configure }) });
  const handler = createTaskHttpHandler(router);
  const node = toNodeHandler(handler);
  const server: HttpServer = createServer((request, response) => {
    (request as IncomingMessage & { auth?: AuthInfo }).auth = testAuthInfo(request);
    void node(request, response);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    router,
    handler,
    async close() {
      await handler.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await router.drain();
    },
  };
}
