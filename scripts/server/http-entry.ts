/**
 * The server's one HTTP endpoint, `/mcp`, shared by every protocol era. Each request is handed to
 * the first era that accepts it, judged by the protocol version the client negotiates (the
 * `MCP-Protocol-Version` header, or an initialize request's `protocolVersion`) and by its session.
 * A newer era goes before the 2025-11-25 one, which takes the rest.
 */
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';

/** What an era looks at to decide whether a request is its own. */
export interface EraRequest {
  method: string;
  headers: IncomingHttpHeaders;
  /** The parsed JSON body of a POST; undefined otherwise. */
  body: unknown;
  /** From the header, else from an initialize request in the body; undefined when neither says. */
  protocolVersion: string | undefined;
  sessionId: string | undefined;
}

export interface ProtocolEra {
  readonly name: string;
  accepts(request: EraRequest): boolean;
  /** Serves the request; `body` is the parsed JSON of a POST (the stream is already read). */
  handle(req: IncomingMessage & { auth?: AuthInfo }, res: ServerResponse, body: unknown): Promise<void>;
  /** Ends every session and stream the era holds. */
  close(): Promise<void>;
}

export interface HttpEntryOptions {
  /** In order of preference: the first that accepts a request serves it. */
  eras: ProtocolEra[];
  /** The caller's auth info (`req.auth` for the SDK transports), or undefined for an anonymous one. */
  authenticate?: (req: IncomingMessage) => AuthInfo | undefined;
  /** Default 4 MiB, as the SDK's own limit. */
  maxBodyBytes?: number;
}

export const MCP_PATH = '/mcp';

export function createHttpEntry(options: HttpEntryOptions): Server {
  const maxBodyBytes = options.maxBodyBytes ?? 4 * 1024 * 1024;
  return createServer((req, res) => {
    void serve(req, res).catch((error: unknown) => {
      if (!res.headersSent) reply(res, 500, -32603, 'Internal error');
      else res.end();
      console.error('mcp request failed:', error);
    });
  });

  async function serve(req: IncomingMessage & { auth?: AuthInfo }, res: ServerResponse): Promise<void> {
    if (new URL(req.url ?? '/', 'http://localhost').pathname !== MCP_PATH) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end(`not found: the MCP endpoint is ${MCP_PATH}\n`);
      return;
    }
    const auth = options.authenticate?.(req);
    if (auth) req.auth = auth;
    let body: unknown;
    if (req.method === 'POST') {
      const text = await readBody(req, maxBodyBytes);
      if (text === null) return reply(res, 413, -32600, `Request body larger than ${maxBodyBytes} bytes`);
      try {
        body = JSON.parse(text);
      } catch {
        return reply(res, 400, -32700, 'Parse error: the body is not JSON');
      }
    }
    const request: EraRequest = {
      method: req.method ?? 'GET',
      headers: req.headers,
      body,
      protocolVersion: headerValue(req.headers['mcp-protocol-version']) ?? initializeVersion(body),
      sessionId: headerValue(req.headers['mcp-session-id']),
    };
    const era = options.eras.find((candidate) => candidate.accepts(request));
    if (!era) return reply(res, 400, -32600, `Unsupported protocol version: ${request.protocolVersion ?? 'none given'}`);
    await era.handle(req, res, body);
  }
}

/** Stops accepting requests, ends every era's sessions, then closes the remaining connections. */
export async function closeHttpEntry(server: Server, eras: ProtocolEra[]): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  await Promise.all(eras.map((era) => era.close()));
  server.closeAllConnections();
  await closed;
}

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function initializeVersion(body: unknown): string | undefined {
  const messages = Array.isArray(body) ? body : [body];
  for (const message of messages) {
    const { method, params } = (message ?? {}) as { method?: unknown; params?: { protocolVersion?: unknown } };
    if (method === 'initialize' && typeof params?.protocolVersion === 'string') return params.protocolVersion;
  }
  return undefined;
}

async function readBody(req: IncomingMessage, limit: number): Promise<string | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) return null;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** A JSON-RPC error as the whole HTTP response. */
export function reply(res: ServerResponse, status: number, code: number, message: string): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }));
}
