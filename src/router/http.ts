/**
 * The router over HTTP: `createMcpHandler` of `@modelcontextprotocol/server` serving a fresh
 * `Server` per request (nothing is kept between requests), plus the `subscriptions/listen`
 * streams that name `taskIds`, which the SDK's own listen router does not know.
 *
 * The result is fetch-shaped (`{ fetch, close }`): mount it with `toNodeHandler` from
 * `@modelcontextprotocol/node`, or call `fetch` from any web-standard runtime. It serves protocol
 * 2026-07-28 only; to serve 2025-era clients on the same URL, route them first with the SDK's
 * `isLegacyRequest(request)`.
 */
import {
  createMcpHandler,
  type AuthInfo,
  type McpHandlerRequestOptions,
  type Server,
} from '@modelcontextprotocol/server';
import { TASKS_EXTENSION_ID_V2 } from '@modelcontextprotocol/ext-tasks/core/v2';
import { declaresTasks } from './authorization.js';
import { TaskListenStreams, subscribableTasks, type RequestId } from './notifications.js';
import type { TaskRouter } from './task-router.js';

export interface TaskHttpHandlerOptions {
  /**
   * Builds each request's server, for servers with features beyond the router's tools; the
   * router attaches itself to what this returns. Default: `router.createServer()`.
   */
  createServer?: () => Server;
  /** SSE keep-alive comment interval for every stream, in ms. Default 15000. */
  keepAliveMs?: number;
  /** Rejected requests and failures with nobody left to answer. */
  onerror?: (error: Error) => void;
}

export interface TaskHttpHandler {
  fetch(request: Request, options?: McpHandlerRequestOptions): Promise<Response>;
  /** Ends open notification streams gracefully and aborts in-flight exchanges. */
  close(): Promise<void>;
}

export const MODERN_PROTOCOL_VERSION = '2026-07-28';
const DEFAULT_KEEP_ALIVE_MS = 15_000;

export function createTaskHttpHandler(router: TaskRouter, options: TaskHttpHandlerOptions = {}): TaskHttpHandler {
  const keepAliveMs = options.keepAliveMs ?? DEFAULT_KEEP_ALIVE_MS;
  const onError = (error: Error) => {
    router.reportError(error);
    options.onerror?.(error);
  };
  const createServer = () => {
    if (options.createServer === undefined) return router.createServer();
    const server = options.createServer();
    router.attach(server);
    return server;
  };
  const mcp = createMcpHandler(createServer, { legacy: 'reject', keepAliveMs, onerror: onError });
  const streams = new TaskListenStreams();

  async function serveTaskListen(listen: TaskListenRequest, request: Request, authInfo: AuthInfo | undefined): Promise<Response> {
    const capabilities = listen.meta['io.modelcontextprotocol/clientCapabilities'];
    if (!declaresTasks(capabilities)) {
      return jsonRpcError(400, listen.id, -32021, 'Missing required client capability', {
        requiredCapabilities: { extensions: { [TASKS_EXTENSION_ID_V2]: {} } },
      });
    }
    const accepted = await subscribableTasks(router.store, listen.taskIds, router.principal(authInfo));
    return streams.serve({
      store: router.store,
      subscriptionId: listen.id,
      taskIds: accepted,
      serverInfo: router.serverInfo,
      keepAliveMs,
      signal: request.signal,
      onError,
    });
  }

  return {
    async fetch(request, requestOptions) {
      const body = requestOptions?.parsedBody ?? (await peekJsonBody(request));
      const listen = taskListenRequest(body, request);
      if (listen !== null) return serveTaskListen(listen, request, requestOptions?.authInfo);
      return mcp.fetch(request, { ...requestOptions, ...(body !== undefined && { parsedBody: body }) });
    },
    async close() {
      streams.closeAll();
      await mcp.close();
    },
  };
}

interface TaskListenRequest {
  id: RequestId;
  taskIds: string[];
  meta: Record<string, unknown>;
}

/**
 * A well-formed 2026-07-28 `subscriptions/listen` that names `taskIds`, or null. Anything less
 * (no envelope, a header that disagrees with the body) goes to the SDK, which owns those answers.
 */
function taskListenRequest(body: unknown, request: Request): TaskListenRequest | null {
  if (!isObject(body) || body['jsonrpc'] !== '2.0' || body['method'] !== 'subscriptions/listen') return null;
  const id = body['id'];
  if (typeof id !== 'string' && typeof id !== 'number') return null;
  const params = body['params'];
  if (!isObject(params) || !isObject(params['notifications']) || !isObject(params['_meta'])) return null;
  const taskIds = params['notifications']['taskIds'];
  if (!Array.isArray(taskIds) || !taskIds.every((taskId) => typeof taskId === 'string')) return null;
  const meta = params['_meta'];
  if (meta['io.modelcontextprotocol/protocolVersion'] !== MODERN_PROTOCOL_VERSION) return null;
  const headerVersion = request.headers.get('mcp-protocol-version');
  const headerMethod = request.headers.get('mcp-method');
  if ((headerVersion !== null && headerVersion !== MODERN_PROTOCOL_VERSION) || (headerMethod !== null && headerMethod !== 'subscriptions/listen')) {
    return null;
  }
  return { id, taskIds, meta };
}

/** The request's JSON body, read from a clone so the request stays readable; undefined if none. */
async function peekJsonBody(request: Request): Promise<unknown> {
  if (request.method !== 'POST') return undefined;
  try {
    return JSON.parse(await request.clone().text());
  } catch {
    return undefined;
  }
}

function jsonRpcError(status: number, id: RequestId, code: number, message: string, data: unknown): Response {
  return Response.json({ jsonrpc: '2.0', id, error: { code, message, data } }, { status });
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
