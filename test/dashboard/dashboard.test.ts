/**
 * `mcp-task-store dashboard` in a real headless Chromium (playwright-core driving the system's
 * browser): the list of tasks made through the store, a transition by another instance showing
 * up live, filters and keyset pages over 10,000 tasks, a cancel with --allow-actions, 401 without
 * the token, and database values that look like markup staying text. Where no Chromium can be
 * found the browser tests are skipped, saying so loudly; `.ci/run` installs Debian's.
 */
import { statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate, PostgresTaskStore } from '../../src/index.js';
import { createPool } from '../../src/postgres/pool.js';
import { spawnServer } from '../sdk/support.js';
import { useTestDatabase } from '../support/test-database.js';
import { CHROMIUM, openDashboardPage, useDashboards } from './support.js';

/** The README's screenshot, taken again with UPDATE_SCREENSHOTS=1; otherwise to a scratch file. */
const SCREENSHOT = process.env.UPDATE_SCREENSHOTS
  ? fileURLToPath(new URL('../../docs/dashboard.png', import.meta.url))
  : join(tmpdir(), `dashboard-${process.pid}.png`);
const XSS = ['<script>window.__pwned = 1</script>', '"><img src=x onerror="window.__pwned = 2">'];

const database = useTestDatabase();
const SCHEMA = 'dashboard_test';
const BULK = 10_000;
let pool: pg.Pool;
let store: PostgresTaskStore;
let browser: Browser;

beforeAll(async () => {
  pool = createPool(database.connectionString, 4);
  await migrate({ pool, schema: SCHEMA });
  store = new PostgresTaskStore({ pool, schema: SCHEMA, reaper: false });
  // 10,000 tasks in one statement, spread over the last 10,000 seconds, a tenth of them 'bulk_odd'.
  await pool.query(
    `INSERT INTO ${SCHEMA}.tasks (task_id, owner, tool_name, arguments, status, status_message, created_at, last_updated_at, ttl_ms, expires_at)
     SELECT md5('bulk' || i), 'bulk-owner', CASE WHEN i % 10 = 0 THEN 'bulk_odd' ELSE 'bulk' END, 'null', 'working', 'Task started',
            now() - interval '1 day' - i * interval '1 second', now() - interval '1 day', 86400000 * 7, now() + interval '6 days'
       FROM generate_series(1, ${BULK}) AS i`,
  );
  if (CHROMIUM) browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await store?.close();
  await pool?.end();
});

const dashboard = useDashboards(database, SCHEMA);

const open = (url: string) => openDashboardPage(browser, url);

describe('the dashboard over HTTP', () => {
  it('answers 401 to a request without the token, and leaks no credential or database URL', async () => {
    const { origin, url } = await dashboard();
    for (const path of ['/', '/client/app.js', '/api/tasks', '/api/summary', '/api/session', '/api/events']) {
      const response = await fetch(`${origin}${path}`);
      expect(response.status, path).toBe(401);
      expect(await response.text()).not.toMatch(/postgres:\/\//);
    }
    expect((await fetch(`${origin}/api/tasks`, { headers: { authorization: 'Bearer wrong-token-wrong-token' } })).status).toBe(401);
    const token = new URL(url).searchParams.get('token')!;
    const session = await fetch(`${origin}/api/session`, { headers: { authorization: `Bearer ${token}` } });
    expect(session.status).toBe(200);
    expect(session.headers.get('content-security-policy')).toMatch(/script-src 'self'/);
    const text = await session.text();
    expect(JSON.parse(text)).toMatchObject({ schema: SCHEMA, database: new URL(database.connectionString).pathname.slice(1), allowActions: false });
    expect(text).not.toMatch(/postgres:\/\/|@|127\.0\.0\.1/);
    // Read-only: a cancel is refused.
    const created = await store.createTask({ toolName: 'read_only' });
    const refused = await fetch(`${origin}/api/tasks/${created.taskId}/cancel`, { method: 'POST', headers: { authorization: `Bearer ${token}`, origin } });
    expect(refused.status).toBe(403);
    expect((await store.getTask(created.taskId))?.status).toBe('working');
  });
});

describe('npm start with MCP_DASHBOARD=1', () => {
  it('serves the dashboard on the same tasks and prints its URL beside the MCP URL', async () => {
    const server = await spawnServer(database.connectionString, { MCP_DEMO_RUN: '0', MCP_DASHBOARD: '1' });
    try {
      const printed = /^dashboard \(read-only\) at (\S+)/m.exec(server.output());
      expect(printed, server.output()).not.toBeNull();
      const entry = await fetch(printed![1]!, { redirect: 'manual' });
      expect(entry.status).toBe(303);
      expect(entry.headers.get('set-cookie')).toMatch(/HttpOnly; SameSite=Strict/);
      expect((await fetch(new URL(printed![1]!).origin)).status).toBe(401);
    } finally {
      expect(await server.stop()).toBe(0);
    }
  }, 60_000);
});

describe.skipIf(!CHROMIUM)('the dashboard in Chromium', () => {
  it('lists tasks made through the store, shows another instance’s transition live, and keeps markup as text', async () => {
    const { url } = await dashboard();
    const other = new PostgresTaskStore({ pool, schema: SCHEMA, reaper: false });
    try {
      const { taskId } = await store.createTask({ toolName: XSS[0]!, owner: 'alice' });
      await store.setStatus(taskId, 'working', XSS[1]);
      const page = await open(url);
      const row = page.locator('tr', { hasText: taskId.slice(0, 8) });
      await expect.poll(() => row.count(), { timeout: 5_000 }).toBe(1);
      expect(await row.textContent()).toContain(XSS[0]);
      expect(await row.textContent()).toContain(XSS[1]);

      const before = Date.now();
      await other.completeTask(taskId, { content: [{ type: 'text', text: XSS.join(' ') }] });
      await row.locator('.status-completed').waitFor({ timeout: 5_000 });
      const liveMs = Date.now() - before;
      expect(liveMs, 'a transition on another instance reaches the page within a second or so').toBeLessThan(3_000);
      // The header's per-tool figures follow: the bulk tool's live tasks, and this one settled in the last hour.
      const tools = page.locator('#tools-body');
      await expect.poll(async () => (await tools.locator('tr', { hasText: 'bulk_odd' }).textContent()) ?? '').toContain('working 1000');
      await expect.poll(async () => (await tools.locator('tr', { hasText: '__pwned = 1' }).textContent()) ?? '', { timeout: 5_000 }).toMatch(/completed 1.*completed 1/);

      await page.goto(`${url.split('?')[0]}#task=${taskId}`);
      await page.reload();
      await page.waitForSelector('#detail:not([hidden])');
      expect(await page.locator('#detail').textContent()).toContain(XSS[1]);
      expect(await page.evaluate(() => (globalThis as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
      expect(await page.locator('#detail img, #tasks-body img, script:not([src])').count()).toBe(0);
      expect(page.dialogs).toEqual([]);
      expect(page.errors, 'the page script ran under its CSP without an error').toEqual([]);
      await page.screenshot({ path: SCREENSHOT });
      expect(statSync(SCREENSHOT).size).toBeGreaterThan(10_000);
      await page.close();
    } finally {
      await other.close();
    }
  }, 30_000);

  it('filters by tool and pages through 10,000 tasks with Older and Newer', async () => {
    const { url } = await dashboard();
    const page = await open(url);
    await page.fill('input[name=tool]', 'bulk_odd');
    await page.click('button[type=submit]');
    await expect.poll(async () => (await page.locator('#tasks-body tr').allTextContents()).every((line) => line.includes('bulk_odd'))).toBe(true);
    const first = await page.locator('#tasks-body tr').first().textContent();
    const seen = new Set<string>();
    for (let pageNumber = 2; pageNumber <= 5; pageNumber++) {
      await page.click('#older');
      await expect.poll(() => page.locator('#page-info').textContent()).toBe(`page ${pageNumber}`);
      for (const line of await page.locator('#tasks-body tr').allTextContents()) {
        expect(line).toContain('bulk_odd');
        expect(seen.has(line), 'a task on two pages').toBe(false);
        seen.add(line);
      }
    }
    for (let back = 0; back < 4; back++) await page.click('#newer');
    await expect.poll(() => page.locator('#page-info').textContent()).toBe('page 1');
    expect(await page.locator('#tasks-body tr').first().textContent()).toBe(first);
    await page.close();
  }, 30_000);

  it('cancels a task with --allow-actions, after a confirmation', async () => {
    const { url } = await dashboard('--allow-actions');
    const { taskId, token } = await store.createTask({ toolName: 'cancel_me' });
    const page = await open(`${url.split('#')[0]}`);
    await page.goto(`${new URL(url).origin}/#task=${taskId}`);
    await page.waitForSelector('#detail:not([hidden]) button.cancel');
    await page.click('button.cancel'); // arms it
    expect((await store.getTask(taskId))?.status).toBe('working');
    await page.click('button.cancel'); // confirms
    await expect.poll(async () => (await store.getTask(taskId))?.status, { timeout: 5_000 }).toBe('cancelled');
    await expect.poll(() => token.isCancelled).toBe(true);
    await page.close();
  }, 30_000);
});
