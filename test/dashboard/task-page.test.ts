/**
 * The dashboard's page script as the package builds it, its one LISTEN connection, the list's
 * "created since" filter, and a leased task's runner on its page: over HTTP, and in headless
 * Chromium where there is one.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TaskPageJson } from '../../src/cli/dashboard/client/wire.js';
import { DASHBOARD_LISTENER_APPLICATION_NAME } from '../../src/cli/dashboard/live-feed.js';
import { migrate, PostgresTaskStore } from '../../src/index.js';
import { createPool } from '../../src/postgres/pool.js';
import { PROJECT_ROOT } from '../package/project-copy.js';
import { useTestDatabase } from '../support/test-database.js';
import { CHROMIUM, openDashboardPage, useDashboards } from './support.js';

const database = useTestDatabase();
const SCHEMA = 'dashboard_page';
let pool: pg.Pool;
let store: PostgresTaskStore;
let browser: Browser;

beforeAll(async () => {
  pool = createPool(database.connectionString, 4);
  await migrate({ pool, schema: SCHEMA });
  store = new PostgresTaskStore({ pool, schema: SCHEMA, reaper: false });
  // Tasks from two days ago, for the "created since" filter to leave out.
  await pool.query(
    `INSERT INTO ${SCHEMA}.tasks (task_id, owner, tool_name, arguments, status, status_message, created_at, last_updated_at, ttl_ms, expires_at)
     SELECT md5('old' || i), NULL, 'old_tool', 'null', 'working', 'Task started', now() - interval '2 days' - i * interval '1 second',
            now() - interval '2 days', 86400000 * 7, now() + interval '5 days'
       FROM generate_series(1, 30) AS i`,
  );
  if (CHROMIUM) browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await store?.close();
  await pool?.end();
});

const dashboard = useDashboards(database, SCHEMA);

describe('the page script', () => {
  it('is what the build compiles from src/cli/dashboard/client with the DOM library, served as ES modules', async () => {
    const out = await mkdtemp(join(tmpdir(), 'dashboard-client-'));
    try {
      // The build's own step: type-checks the client against the DOM library and emits it.
      await promisify(execFile)(process.execPath, [join(PROJECT_ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'src/cli/dashboard/client', '--outDir', out], { cwd: PROJECT_ROOT });
      const built = (await readdir(out)).filter((name) => name.endsWith('.js'));
      expect(built.sort()).toEqual(['app.js', 'detail.js', 'dom.js', 'wire.js']);
      const { origin, token } = await dashboard();
      const authorization = { authorization: `Bearer ${token}` };
      expect(await (await fetch(`${origin}/`, { headers: authorization })).text()).toContain('<script type="module" src="/client/app.js"></script>');
      for (const name of built) {
        const served = await fetch(`${origin}/client/${name}`, { headers: authorization });
        expect(served.headers.get('content-type'), name).toBe('text/javascript; charset=utf-8');
        expect(await served.text(), `${name}: from a source checkout the server transpiles the same files`).toBe(await readFile(join(out, name), 'utf8'));
      }
      expect((await fetch(`${origin}/client/missing.js`, { headers: authorization })).status).toBe(404);
      expect((await fetch(`${origin}/client/app.js`)).status).toBe(401);
    } finally {
      await rm(out, { recursive: true, force: true });
    }
  }, 60_000);
});

describe('the live feed', () => {
  it('is one LISTEN connection for the dashboard, however many pages watch', async () => {
    const listeners = async () =>
      (await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1', [DASHBOARD_LISTENER_APPLICATION_NAME])).rows[0]!.n;
    await dashboard.stopAll(); // the other tests' dashboards listen too
    await expect.poll(listeners).toBe(0);
    const { origin, token } = await dashboard();
    const streams = await Promise.all(
      Array.from({ length: 5 }, async () => {
        const controller = new AbortController();
        const response = await fetch(`${origin}/api/events`, { headers: { authorization: `Bearer ${token}` }, signal: controller.signal });
        expect(response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
        const reader = response.body!.getReader();
        expect(new TextDecoder().decode((await reader.read()).value)).toMatch(/^event: feed\n/);
        return controller;
      }),
    );
    await expect.poll(listeners).toBe(1);
    for (const stream of streams) stream.abort();
  });
});

describe('the list filtered by creation time', () => {
  it('takes a duration back or an ISO time, as the CLI does, and refuses anything else', async () => {
    const recent = await store.createTask({ toolName: 'recent_tool' });
    const { origin, token } = await dashboard();
    const list = async (since: string) => {
      const response = await fetch(`${origin}/api/tasks?since=${encodeURIComponent(since)}&limit=200`, { headers: { authorization: `Bearer ${token}` } });
      return { status: response.status, body: (await response.json()) as TaskPageJson & { error?: string } };
    };
    const lastHour = await list('1h');
    expect(lastHour.status).toBe(200);
    expect(lastHour.body.tasks.map((task) => task.taskId)).toContain(recent.taskId);
    expect(lastHour.body.tasks.some((task) => task.toolName === 'old_tool')).toBe(false);
    expect((await list('3d')).body.tasks.filter((task) => task.toolName === 'old_tool')).toHaveLength(30);
    const isoDayAgo = new Date(Date.now() - 86_400_000).toISOString();
    expect((await list(isoDayAgo)).body.tasks.some((task) => task.toolName === 'old_tool')).toBe(false);
    const refused = await list('yesterday');
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatch(/^created since yesterday: expected an ISO time/);
  });
});

describe.skipIf(!CHROMIUM)('the page in Chromium', () => {
  it('filters the list by "created since" from the form', async () => {
    const { taskId } = await store.createTask({ toolName: 'since_tool' });
    const { url } = await dashboard();
    const page = await openDashboardPage(browser, url);
    const tools = () => page.locator('#tasks-body td.tool').allTextContents();
    await expect.poll(tools).toContain('old_tool');
    await page.fill('input[name=since]', '1h');
    await page.click('button[type=submit]');
    await expect.poll(async () => (await tools()).includes('old_tool')).toBe(false);
    expect(await page.locator('#tasks-body tr', { hasText: taskId.slice(0, 8) }).count()).toBe(1);
    await page.fill('input[name=since]', 'soon');
    await page.click('button[type=submit]');
    await expect.poll(() => page.locator('#problem').textContent()).toMatch(/created since soon: expected/);
    await page.click('button[type=reset]');
    await expect.poll(tools).toContain('old_tool');
    expect(await page.locator('#problem').isHidden()).toBe(true);
    expect(page.errors.filter((error) => !/status of 400|^400 \/api\/tasks$/.test(error))).toEqual([]);
    await page.close();
  }, 30_000);

  it("shows a leased task's runner and lease on its page", async () => {
    const { taskId } = await store.leases.createLeasedTask({ toolName: 'leased_tool' });
    const { url, origin } = await dashboard();
    const page = await openDashboardPage(browser, url);
    await page.goto(`${origin}/#task=${taskId}`);
    const runner = page.locator('#detail dt', { hasText: 'runner' }).locator('xpath=following-sibling::dd[1]');
    await expect.poll(() => runner.textContent()).toMatch(new RegExp(`^${store.leases.runnerId.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}, since .+, lease until `));
    await store.completeTask(taskId, { content: [] }); // settling ends the lease
    await expect.poll(() => page.locator('#detail dt', { hasText: 'runner' }).count(), { timeout: 5_000 }).toBe(0);
    await page.close();
  }, 30_000);
});
