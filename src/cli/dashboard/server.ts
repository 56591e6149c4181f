/**
 * The dashboard's HTTP server (node:http, no framework): the page, its stylesheet, its script
 * (the ES modules of ./client-script.ts, under /client/), the JSON endpoints of ./api.ts, and
 * `/api/events`, the server-sent events of ./live-feed.ts.
 *
 * Every request needs the access token (./access.ts); without it the answer is 401 and nothing
 * else. Every answer carries a Content-Security-Policy that allows the page's own script and
 * stylesheet only (no inline script or style, no other origin, Trusted Types required), and no
 * page, answer or event carries a credential or the database URL. Only a cancel writes, and only
 * with `allowActions`.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TaskStore } from '../../contract/types.js';
import type { CliDatabase } from '../database.js';
import { DashboardAccess } from './access.js';
import { BadRequest, DashboardApi, DEFAULT_PAGE_SIZE } from './api.js';
import type { LiveFeed } from './live-feed.js';
import { loadClientModules } from './client-script.js';
import { PAGE_CSS, PAGE_HTML } from './page.js';
import type { SessionJson } from './client/wire.js';

const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "require-trusted-types-for 'script'",
].join('; ');
const TASK_PATH = /^\/api\/tasks\/([0-9a-f]{32})(\/cancel)?$/;
const CLIENT_PATH = /^\/client\/([a-z-]+\.js)$/;

export interface DashboardServerOptions {
  database: CliDatabase;
  store: TaskStore;
  feed: LiveFeed;
  token: string;
  host: string;
  port: number;
  allowActions: boolean;
  /** The database's name, shown in the header: never its URL. */
  databaseLabel: string;
}

export interface RunningDashboard {
  /** The page's address, with the token: what to open in a browser. */
  readonly url: string;
  readonly origin: string;
  close(): Promise<void>;
}

export async function startDashboardServer(options: DashboardServerOptions): Promise<RunningDashboard> {
  const api = new DashboardApi(options.database, options.store);
  const clientModules = await loadClientModules();
  const streams = new Set<ServerResponse>();
  let access: DashboardAccess | null = null;

  const server: Server = createServer((request, response) => {
    void handle(request, response).catch((error: unknown) => {
      if (response.headersSent) return void response.destroy();
      send(response, error instanceof BadRequest ? 400 : 500, 'application/json', JSON.stringify({ error: describe(error) }));
    });
  });

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? '/', 'http://dashboard');
    if (!access) return send(response, 503, 'text/plain', 'starting');
    const credential = access.credential(request, url);
    if (credential === null) return send(response, 401, 'text/plain', 'the dashboard needs its access token: open the URL it printed');
    if (credential === 'query') {
      // Into a cookie, and out of the address bar and the history.
      response.setHeader('set-cookie', access.cookie(url.searchParams.get('token')!));
      url.searchParams.delete('token');
      response.writeHead(303, { location: `${url.pathname}${url.search}`, 'content-security-policy': CONTENT_SECURITY_POLICY });
      return void response.end();
    }
    const taskPath = TASK_PATH.exec(url.pathname);
    if (request.method === 'POST') {
      if (!taskPath?.[2]) return send(response, 404, 'text/plain', 'not found');
      if (!options.allowActions) return send(response, 403, 'application/json', JSON.stringify({ error: 'actions are off: start the dashboard with --allow-actions' }));
      const refusal = access.refuseAction(request);
      if (refusal) return send(response, 403, 'application/json', JSON.stringify({ error: refusal }));
      const cancelled = await api.cancel(taskPath[1]!);
      return cancelled ? sendJson(response, cancelled) : send(response, 404, 'application/json', JSON.stringify({ error: 'no such task' }));
    }
    if (request.method !== 'GET') return send(response, 405, 'text/plain', 'method not allowed');
    switch (url.pathname) {
      case '/':
        return send(response, 200, 'text/html; charset=utf-8', PAGE_HTML);
      case '/favicon.ico': // the page has none; an empty answer keeps the browser from logging a 404
        response.writeHead(204, { 'cache-control': 'max-age=86400', 'content-security-policy': CONTENT_SECURITY_POLICY });
        return void response.end();
      case '/app.css':
        return send(response, 200, 'text/css; charset=utf-8', PAGE_CSS);
      case '/api/session': {
        const session: SessionJson = {
          schema: options.database.schema,
          database: options.databaseLabel,
          allowActions: options.allowActions,
          csrfToken: access.csrfToken,
          pageSize: DEFAULT_PAGE_SIZE,
        };
        return sendJson(response, session);
      }
      case '/api/summary':
        return sendJson(response, { ...(await api.summary()), feed: options.feed.state });
      case '/api/tasks':
        return sendJson(response, await api.tasks(url.searchParams));
      case '/api/events':
        return events(response);
    }
    const clientModule = clientModules.get(CLIENT_PATH.exec(url.pathname)?.[1] ?? '');
    if (clientModule !== undefined) return send(response, 200, 'text/javascript; charset=utf-8', clientModule);
    if (taskPath && !taskPath[2]) {
      const detail = await api.task(taskPath[1]!);
      return detail ? sendJson(response, detail) : send(response, 404, 'application/json', JSON.stringify({ error: 'no such task' }));
    }
    return send(response, 404, 'text/plain', 'not found');
  }

  /** One page's event stream: every event of the shared feed, and a comment now and then to keep proxies from closing it. */
  function events(response: ServerResponse): void {
    response.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      'content-security-policy': CONTENT_SECURITY_POLICY,
      'x-content-type-options': 'nosniff',
    });
    response.write(`event: feed\ndata: ${JSON.stringify({ state: options.feed.state })}\n\n`);
    streams.add(response);
    const unsubscribe = options.feed.subscribe((event) => response.write(`event: ${event.name}\ndata: ${JSON.stringify(event.data)}\n\n`));
    const keepAlive = setInterval(() => response.write(': keep-alive\n\n'), 15_000).unref();
    response.on('close', () => {
      clearInterval(keepAlive);
      unsubscribe();
      streams.delete(response);
    });
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  access = new DashboardAccess(options.token, port);
  options.feed.start();
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  const origin = `http://${host}:${port}`;
  return {
    url: `${origin}/?token=${options.token}`,
    origin,
    async close() {
      for (const stream of streams) stream.end();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await options.feed.close();
    },
  };
}

function send(response: ServerResponse, status: number, type: string, body: string): void {
  response.writeHead(status, {
    'content-type': type,
    'cache-control': 'no-store',
    'content-security-policy': CONTENT_SECURITY_POLICY,
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
  });
  response.end(body);
}

function sendJson(response: ServerResponse, value: unknown): void {
  send(response, 200, 'application/json; charset=utf-8', JSON.stringify(value));
}

/** A failure as the page shows it: the message only, never a stack or a connection string. */
function describe(error: unknown): string {
  return error instanceof Error ? error.message.replace(/postgres(ql)?:\/\/[^\s]*/gi, '<database>') : 'internal error';
}
