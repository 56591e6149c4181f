/**
 * `npm start`: the store at work on PostgreSQL. Uses DATABASE_URL when set, else starts embedded
 * PostgreSQL with its data in .data/ (so a second run sees the first run's tasks). It migrates,
 * drives four tasks through their lives, and prints their history straight from SQL.
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type pg from 'pg';
import { migrate, PostgresTaskStore, type InputRequests } from '../src/index.js';
import { scriptPool } from './support.js';
import { openScriptDatabase } from './database.js';

const SCHEMA = 'mcp_tasks';
const DATA_DIRECTORY = join(fileURLToPath(new URL('..', import.meta.url)), '.data');

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function main(): Promise<void> {
  const database = await openScriptDatabase(DATA_DIRECTORY);
  console.log(`database: ${database.description}`);

  try {
    await showTasks(database.connectionString);
  } finally {
    await database.stop();
  }
}

async function showTasks(connectionString: string): Promise<void> {
  const { applied } = await migrate({ connectionString, schema: SCHEMA });
  console.log(`migrations applied now: ${applied.length ? applied.join(', ') : 'none (already up to date)'}`);
  const pool = scriptPool(connectionString, 10);
  // Tasks kept for a day, so the next run finds this run's tasks.
  const store = new PostgresTaskStore({
    pool,
    schema: SCHEMA,
    defaultTtlMs: 24 * 60 * 60 * 1000,
    reaper: { intervalMs: 1000, tombstoneRetentionMs: 60_000 },
  });
  try {
    await driveTasks(store, pool);
  } finally {
    await store.close();
    await pool.end();
  }
}

async function driveTasks(store: PostgresTaskStore, pool: pg.Pool): Promise<void> {  const earlier = await store.listTasks({ limit: 1000 });
  console.log(`tasks kept from earlier runs: ${earlier.tasks.length} live`);

  // 1. A tool that reports progress and completes.
  const report = await store.createTask({ toolName: 'render_report', arguments: { quarter: 'Q3' }, owner: 'alice' });
  await store.setStatus(report.taskId, 'working', 'rendering page 1 of 2');
  await store.setStatus(report.taskId, 'working', 'rendering page 2 of 2');
  await store.completeTask(report.taskId, { content: [{ type: 'text', text: 'report.pdf is ready' }] });

  // 2. A tool that asks the client a question, waits for the answer, and resumes.
  const deploy = await store.createTask({ toolName: 'deploy', arguments: { service: 'api' }, owner: 'alice' });
  const question: InputRequests = {
    approval: { method: 'elicitation/create', params: { message: 'Deploy api to production?', requestedSchema: { type: 'object' } } },
  };
  await store.requireInput(deploy.taskId, question, 'waiting for approval');
  const done = store.waitForCompletion(deploy.taskId); // wakes on NOTIFY when the task settles
  await store.applyInputResponses(deploy.taskId, { approval: { action: 'accept' } });
  const resume = await store.resumeContext(deploy.taskId);
  await store.completeTask(deploy.taskId, {
    content: [{ type: 'text', text: `deployed ${JSON.stringify(resume?.arguments)} after ${Object.keys(resume?.inputResponses ?? {})}` }],
  });
  console.log(`waiter saw deploy ${(await done)?.task.status}`);

  // 3. A tool whose work is cancelled: the handler watches its token.
  const crawl = await store.createTask({ toolName: 'crawl_site', arguments: { url: 'https://example.com' } });
  let pagesCrawled = 0;
  const handler = (async () => {
    while (!crawl.token.isCancelled) {
      pagesCrawled += 1;
      await sleep(20);
    }
  })();
  await sleep(100);
  await store.cancelTask(crawl.taskId, 'user closed the tab');
  await handler;
  console.log(`crawl handler stopped after ${pagesCrawled} pages: token ${crawl.token.signal.reason}`);

  // 4. A task nobody finishes: its TTL runs out, its token is raised, the reaper tombstones it.
  const forgotten = await store.createTask({ toolName: 'long_export', ttlMs: 1000 });
  await forgotten.token.whenCancelled();
  await store.reapExpired();
  console.log(`long_export after its ttl: getTask ${JSON.stringify(await store.getTask(forgotten.taskId))}, presence ${JSON.stringify(await store.taskPresence(forgotten.taskId))}`);

  const ids = [report.taskId, deploy.taskId, crawl.taskId, forgotten.taskId];
  const { rows } = await pool.query(
    `SELECT h.task_id, h.at, h.from_status, h.to_status, h.message
       FROM ${SCHEMA}.task_history AS h
      WHERE h.task_id = ANY($1)
      ORDER BY min(h.id) OVER (PARTITION BY h.task_id), h.id`,
    [ids],
  );
  console.log('\ntask history, straight from SQL:');
  for (const row of rows) {
    console.log(
      `  ${row.task_id.slice(0, 8)}  ${row.at.toISOString()}  ${String(row.from_status ?? '-').padEnd(14)} → ${row.to_status.padEnd(14)} ${row.message ?? ''}`,
    );
  }
}

await main();
