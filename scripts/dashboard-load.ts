/**
 * `npm run bench:dashboard`: how the dashboard keeps up. 10,000 tasks in the schema, a page open
 * in headless Chromium, and another store instance making 50 progress transitions per second on
 * the tasks the page shows, for 20 s. Each transition's message carries the moment it committed;
 * a MutationObserver in the page records when the row showed it. Prints how many the page showed
 * and the delay from commit to screen (p50, p99, max). Needs a Chromium (/usr/bin/chromium).
 *
 * The database is DATABASE_URL when set (schema dashboard_load, dropped afterwards), else a
 * throwaway embedded PostgreSQL.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { migrate, PostgresTaskStore } from '../src/index.js';
import { openScriptDatabase } from './database.js';
import { scriptPool } from './support.js';

const SCHEMA = 'dashboard_load';
const TASKS = 10_000;
const PER_SECOND = 50;
const SECONDS = 20;
const SHOWN = 25;
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CHROMIUM = ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((path) => existsSync(path));
if (!CHROMIUM) throw new Error('no Chromium at /usr/bin/chromium: apt-get install chromium');

const database = await openScriptDatabase();
console.log(`database: ${database.description}`);
const pool = scriptPool(database.connectionString, 4);
await pool.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
await migrate({ pool, schema: SCHEMA });
await pool.query(
  `INSERT INTO ${SCHEMA}.tasks (task_id, owner, tool_name, arguments, status, status_message, created_at, last_updated_at, ttl_ms, expires_at)
   SELECT md5('load' || i), 'load', 'background', 'null', 'working', 'Task started', now() - interval '1 hour' - i * interval '1 ms',
          now() - interval '1 hour', 86400000, now() + interval '1 day'
     FROM generate_series(1, ${TASKS}) AS i`,
);
const store = new PostgresTaskStore({ pool, schema: SCHEMA, reaper: false });
const shown = await Promise.all(Array.from({ length: SHOWN }, () => store.createTask({ toolName: 'load', ttlMs: 3_600_000 })));

const cli = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'dashboard', '--schema', SCHEMA], {
  cwd: ROOT,
  env: { ...process.env, DATABASE_URL: database.connectionString },
  stdio: ['ignore', 'pipe', 'inherit'],
});
const url = await new Promise<string>((resolve) => {
  let output = '';
  cli.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString();
    const match = /^dashboard: (\S+)/m.exec(output);
    if (match) resolve(match[1]!);
  });
});
const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
try {
  const page = await browser.newPage();
  await page.goto(url);
  await page.waitForSelector('body[data-ready="true"]');
  // When each "load <n> <committed ms>" message first appears in the table, on the wall clock.
  await page.evaluate(() => {
    const seen = new Map<string, number>();
    (globalThis as unknown as { seenMessages: Map<string, number> }).seenMessages = seen;
    const body = (globalThis as unknown as { document: { getElementById(id: string): unknown } }).document.getElementById('tasks-body');
    const Observer = (globalThis as unknown as { MutationObserver: new (callback: () => void) => { observe(node: unknown, options: object): void } }).MutationObserver;
    new Observer(() => {
      const text = (body as { textContent: string }).textContent;
      for (const match of text.matchAll(/load (\d+) (\d+)/g)) if (!seen.has(match[1]!)) seen.set(match[1]!, Date.now());
    }).observe(body, { subtree: true, childList: true, characterData: true });
  });

  const committed = new Map<string, number>();
  const started = Date.now();
  for (let n = 0; n < PER_SECOND * SECONDS; n++) {
    const due = started + (n * 1000) / PER_SECOND;
    if (due > Date.now()) await new Promise((resolve) => setTimeout(resolve, due - Date.now()));
    const task = shown[n % SHOWN]!;
    await store.setStatus(task.taskId, 'working', `load ${n} ${Date.now()}`);
    committed.set(String(n), Date.now());
  }
  const rate = (PER_SECOND * SECONDS) / ((Date.now() - started) / 1000);
  await new Promise((resolve) => setTimeout(resolve, 3_000));
  const seen = new Map(await page.evaluate(() => [...(globalThis as unknown as { seenMessages: Map<string, number> }).seenMessages]));
  // A row shows its latest message only: the last message of each row within a read is what must appear.
  const lastPerRow = new Map<number, string>();
  for (const n of committed.keys()) lastPerRow.set(Number(n) % SHOWN, n);
  const delays = [...seen].map(([n, at]) => at - committed.get(n)!).sort((a, b) => a - b);
  const quantile = (q: number) => delays[Math.min(delays.length - 1, Math.floor(q * delays.length))] ?? NaN;
  const finalShown = [...lastPerRow.values()].filter((n) => seen.has(n)).length;
  console.log(
    `\n${TASKS.toLocaleString('en')} tasks in the schema, ${SHOWN} on the page, ${(PER_SECOND * SECONDS).toLocaleString('en')} progress transitions ` +
      `at ${rate.toFixed(1)}/s from another instance for ${SECONDS} s:\n` +
      `  the page showed ${seen.size} of them (a row shows its latest message; between two reads a row's earlier ones are passed over)\n` +
      `  and the final message of all ${finalShown === SHOWN ? 'of the' : `but ${SHOWN - finalShown} of the`} ${SHOWN} rows\n` +
      `  commit -> on screen: p50 ${quantile(0.5)} ms, p99 ${quantile(0.99)} ms, max ${delays.at(-1)} ms`,
  );
} finally {
  await browser.close();
  cli.kill('SIGINT');
  await store.close();
  await pool.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
  await pool.end();
  await database.stop();
}
