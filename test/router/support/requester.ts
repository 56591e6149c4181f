/**
 * The official requester side, as an application would set it up: the SDK v2 `Client` pinned to
 * protocol 2026-07-28, wrapped by `createTaskSessionFromClient` from
 * `@modelcontextprotocol/ext-tasks/client`. The session needs a raw request path for the V2 task
 * wire (the SDK's codecs do not know it); {@link rawDispatcher} is that path over plain HTTP, with
 * the SEP-2243 routing headers a 2026-07-28 server checks.
 */
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import {
  createApplicationInputHandler,
  createTaskSessionFromClient,
  type ApplicationInputCallbacks,
  type JsonRpcResponse,
  type RawClientDispatch,
  type TaskEnabledSession,
} from '@modelcontextprotocol/ext-tasks/client';
import { MODERN_PROTOCOL_VERSION } from '../../../src/router/index.js';

export const CLIENT_INFO = { name: 'router-test-client', version: '1.0.0' };

let nextId = 1;

/** The `Mcp-Name` header SEP-2243 and SEP-2663 require for a method, if any. */
function mcpName(method: string, params: Record<string, unknown> | undefined): string | undefined {
  const value = method === 'tools/call' ? params?.['name'] : method.startsWith('tasks/') ? params?.['taskId'] : undefined;
  return typeof value === 'string' ? value : undefined;
}

/** Sends one JSON-RPC request and returns its response, read from JSON or from an SSE stream. */
export async function postJsonRpc(
  url: string,
  message: { method: string; params?: Record<string, unknown> },
  options: { headers?: Record<string, string>; signal?: AbortSignal } = {},
): Promise<JsonRpcResponse> {
  const id = nextId++;
  const name = mcpName(message.method, message.params);
  const headers = new Headers({
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': MODERN_PROTOCOL_VERSION,
    'mcp-method': message.method,
    ...(name !== undefined && { 'mcp-name': name }),
  });
  for (const [header, value] of Object.entries(options.headers ?? {})) headers.set(header, value);
  const response = await fetch(url, {
    method: 'POST',
    headers,
    body: JSON.stringify({ jsonrpc: '2.0', id, ...message }),
    ...(options.signal !== undefined && { signal: options.signal }),
  });
  const text = await response.text();
  const body = response.headers.get('content-type')?.includes('text/event-stream')
    ? text
        .split('\n')
        .filter((line) => line.startsWith('data:'))
        .map((line) => JSON.parse(line.slice(5)) as Record<string, unknown>)
        .find((event) => event['id'] === id)
    : (JSON.parse(text) as Record<string, unknown>);
  if (body === undefined) throw new Error(`no response to ${message.method} (HTTP ${response.status})`);
  if (body['error'] !== undefined) return { kind: 'error', error: body['error'] as never };
  return { kind: 'result', result: body['result'] as never };
}

export function rawDispatcher(url: string, headers: Record<string, string>): RawClientDispatch {
  return (request, options) =>
    postJsonRpc(url, request as { method: string; params?: Record<string, unknown> }, {
      headers: { ...headers, ...options?.context?.headers },
      ...(options?.signal !== undefined && { signal: options.signal }),
    });
}

export interface Requester {
  readonly client: Client;
  readonly session: TaskEnabledSession;
  close(): Promise<void>;
}

/**
 * A connected requester for `url`, acting as `principal` (a bearer token the test server maps to
 * that subject) or anonymously, answering input requests with `input`.
 */
export async function connectRequester(
  url: string,
  options: { principal?: string; input?: ApplicationInputCallbacks<void> } = {},
): Promise<Requester> {
  const headers: Record<string, string> = options.principal === undefined ? {} : { authorization: `Bearer ${options.principal}` };
  const clientCapabilities = { elicitation: {}, sampling: {}, roots: {} };
  const client = new Client(CLIENT_INFO, {
    capabilities: clientCapabilities,
    versionNegotiation: { mode: { pin: MODERN_PROTOCOL_VERSION } },
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  const session = createTaskSessionFromClient(client, {
    endpointId: url,
    rawDispatch: rawDispatcher(url, headers),
    v2RequestFraming: { protocolVersion: MODERN_PROTOCOL_VERSION, clientInfo: CLIENT_INFO, clientCapabilities },
    ...(options.input !== undefined && { onInputRequest: createApplicationInputHandler(options.input) }),
  });
  return {
    client,
    session,
    async close() {
      await session.close();
      await client.close();
    },
  };
}

/**
 * The per-request `_meta` envelope of a 2026-07-28 request: elicitation and roots (no sampling),
 * and the tasks extension unless told otherwise.
 */
export function envelope(options: { tasks?: boolean } = {}): Record<string, unknown> {
  return {
    'io.modelcontextprotocol/protocolVersion': MODERN_PROTOCOL_VERSION,
    'io.modelcontextprotocol/clientInfo': CLIENT_INFO,
    'io.modelcontextprotocol/clientCapabilities': {
      elicitation: {},
      roots: {},
      ...(options.tasks !== false && { extensions: { 'io.modelcontextprotocol/tasks': {} } }),
    },
  };
}

/**
 * One raw 2026-07-28 request, as `principal` (or anonymously): the result, or the JSON-RPC error
 * as an `{ error }` object, so tests can compare refusals exactly.
 */
export async function call(
  url: string,
  principal: string | null,
  method: string,
  params: Record<string, unknown>,
  options: { tasks?: boolean } = {},
): Promise<{ result?: Record<string, unknown>; error?: { code: number; message: string; data?: unknown } }> {
  const response = await postJsonRpc(
    url,
    { method, params: { ...params, _meta: envelope(options) } },
    { headers: principal === null ? {} : { authorization: `Bearer ${principal}` } },
  );
  return response.kind === 'result' ? { result: response.result as Record<string, unknown> } : { error: response.error as never };
}
