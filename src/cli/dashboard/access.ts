/**
 * Who may use the dashboard: whoever holds its access token. The token comes in the URL the
 * command prints (`/?token=…`) once; the page then answers with an HttpOnly, SameSite=Strict
 * cookie and a redirect that takes the token out of the address bar and the history. Every
 * request must carry the token (the cookie, `?token=`, or `Authorization: Bearer`), compared in
 * constant time.
 *
 * A request that changes something (a cancel) must also come from the page itself: its Origin is
 * the dashboard's own, and it carries the CSRF token the page was given, which is derived from
 * the access token and so changes with it.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { CliError } from '../command.js';

/** Characters a token may hold: safe in a URL, a cookie and a header without escaping. */
const TOKEN = /^[A-Za-z0-9._~-]{16,256}$/;
export const TOKEN_ENV = 'MCP_TASK_STORE_DASHBOARD_TOKEN';
export const CSRF_HEADER = 'x-csrf-token';

/** 32 random bytes, base64url: 43 characters. */
export function generateToken(): string {
  return randomBytes(32).toString('base64url');
}

export function validateToken(token: string, from: string): string {
  if (!TOKEN.test(token)) throw new CliError('usage', `${from}: expected 16 to 256 characters of A-Z, a-z, 0-9, '.', '_', '~' or '-'`);
  return token;
}

/** How a request proved it holds the token; `query` asks for the cookie and a redirect. */
export type Credential = 'cookie' | 'header' | 'query' | null;

export class DashboardAccess {
  readonly cookieName: string;
  /** What the page sends back in {@link CSRF_HEADER} on a POST. */
  readonly csrfToken: string;
  private readonly digest: Buffer;
  private readonly csrfDigest: Buffer;

  constructor(token: string, port: number) {
    this.digest = sha256(token);
    this.csrfToken = createHmac('sha256', token).update('mcp-task-store dashboard csrf').digest('base64url');
    this.csrfDigest = sha256(this.csrfToken);
    // Cookies do not tell ports apart: two dashboards on one host keep a cookie each.
    this.cookieName = `mcp_task_store_dashboard_${port}`;
  }

  /** Which credential of the request holds the token, or null when none does. */
  credential(request: IncomingMessage, url: URL): Credential {
    if (this.matches(cookieValue(request.headers.cookie, this.cookieName))) return 'cookie';
    const authorization = request.headers.authorization;
    if (authorization?.startsWith('Bearer ') && this.matches(authorization.slice('Bearer '.length))) return 'header';
    if (this.matches(url.searchParams.get('token'))) return 'query';
    return null;
  }

  /** The Set-Cookie header that lets the browser come back without the token in the URL. */
  cookie(token: string): string {
    return `${this.cookieName}=${token}; Path=/; HttpOnly; SameSite=Strict`;
  }

  /**
   * Why a state-changing request is refused, or null: it must come from a page of this dashboard
   * (its Origin names the host it was sent to, and the browser does not call it cross-site) and
   * carry the CSRF token.
   */
  refuseAction(request: IncomingMessage): string | null {
    const origin = request.headers.origin;
    if (!origin || origin !== `http://${request.headers.host}`) return 'not from the dashboard page (Origin differs)';
    const site = request.headers['sec-fetch-site'];
    if (site !== undefined && site !== 'same-origin') return `not from the dashboard page (Sec-Fetch-Site ${site})`;
    const csrf = request.headers[CSRF_HEADER];
    if (typeof csrf !== 'string' || !timingSafeEqual(sha256(csrf), this.csrfDigest)) return 'missing or wrong CSRF token';
    return null;
  }

  /** Constant time whatever the candidate's length: digests are compared, never the strings. */
  private matches(candidate: string | null | undefined): boolean {
    return typeof candidate === 'string' && timingSafeEqual(sha256(candidate), this.digest);
  }
}

function sha256(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

function cookieValue(header: string | undefined, name: string): string | null {
  for (const part of header?.split(';') ?? []) {
    const separator = part.indexOf('=');
    if (separator > 0 && part.slice(0, separator).trim() === name) return part.slice(separator + 1).trim();
  }
  return null;
}
