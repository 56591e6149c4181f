/**
 * The README's history cookbook: every SQL block of the section runs against the default schema
 * (mcp_tasks) holding scripted tasks at known instants, and gives exactly the expected rows. Three
 * of the tasks expired and had their tombstones purged: the per-tool and per-owner queries must
 * still count them, from the history alone.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate, PostgresTaskStore } from '../src/index.js';
import { COOKBOOK, sqlBlocks } from './support/readme-sql.js';
import { setTimeline } from './support/task-timelines.js';
import { useTestDatabase } from './support/test-database.js';
import { within } from './support/time.js';

const SCHEMA = 'mcp_tasks';
const BLOCKS = sqlBlocks(COOKBOOK);
const MINUTE_MS = 60_000;
const DAY_MS = 86_400_000;

const database = useTestDatabase();
let pool: pg.Pool;
let store: PostgresTaskStore;

/** Midnight UTC two days ago and one day ago: settled tasks fall on known days, inside 7 days. */
const today = Math.floor(Date.now() / DAY_MS) * DAY_MS;
const [day0, day1] = [today - 2 * DAY_MS, today - DAY_MS];
const hour = (day: number, h: number) => new Date(day + h * 3_600_000);
const ago = (minutes: number) => new Date(Date.now() - minutes * MINUTE_MS);

/** Every task the fixture creates: its owner and its creation instant. */
const created: { owner: string | null; at: Date }[] = [];
let ids: Record<'rendered' | 'stuck', string>;
const stuckSince = ago(20);

type Lifecycle = (taskId: string) => Promise<unknown>;
const complete: Lifecycle = (taskId) => store.completeTask(taskId, { content: [] });
const fail: Lifecycle = (taskId) => store.failTask(taskId, { code: -32603, message: 'boom' });
const ask: Lifecycle = (taskId) =>
  store.requireInput(taskId, { approval: { method: 'elicitation/create', params: { message: 'Go ahead?' } } });

/** A task through `lifecycle`, its history rows then moved to `start` plus `offsetsMs`. */
async function scripted(toolName: string, owner: string | null, lifecycle: Lifecycle, start: Date, offsetsMs: number[]): Promise<string> {
  const { taskId } = await store.createTask({ toolName, ttlMs: 3_600_000, ...(owner === null ? {} : { owner }) });
  await lifecycle(taskId);
  await setTimeline(pool, SCHEMA, taskId, start, offsetsMs);
  created.push({ owner, at: start });
  return taskId;
}

beforeAll(async () => {
  // `date` as the text PostgreSQL sends, not a Date at local midnight.
  pool = new pg.Pool({
    connectionString: database.connectionString,
    types: { getTypeParser: (oid: number, format?: 'text' | 'binary') => (oid === 1082 ? (value: string) => value : pg.types.getTypeParser(oid, format)) },
  } as pg.PoolConfig);
  await migrate({ pool, schema: SCHEMA });
  store = new PostgresTaskStore({ pool, reaper: { intervalMs: 2 ** 31 - 1, tombstoneRetentionMs: 0 } });
  await within('the start-up reaper pass', new Promise((resolve) => store.onReaperPass(resolve)));

  // Gone for good: expired, tombstoned and purged; only their history is left.
  const gone = [
    await scripted('render', 'alice', complete, hour(day0, 10), [0, 4000]),
    await scripted('render', 'bob', fail, hour(day1, 10), [0, 10_000]),
    await scripted('crawl', 'bob', fail, hour(day1, 11), [0, 2000]),
  ];
  for (const taskId of gone) expect(await store.setTtl(taskId, 0)).toBe(true);
  expect(await store.reapExpired()).toEqual({ tombstoned: 3, purged: 3 });
  const { rows } = await pool.query(`SELECT count(*)::int AS n FROM ${SCHEMA}.tombstones`);
  expect(rows).toEqual([{ n: 0 }]);

  await scripted('render', 'alice', complete, hour(day0, 12), [0, 6000]);
  const rendered = await scripted(
    'render',
    'bob',
    async (taskId) => {
      await store.setStatus(taskId, 'input_required', 'which format?');
      await store.setStatus(taskId, 'working', 'rendering');
      await complete(taskId);
    },
    hour(day1, 12),
    [0, 1000, 3000, 8000],
  );
  await scripted('crawl', null, (taskId) => store.cancelTask(taskId), hour(day1, 13), [0, 3000]);
  // Waiting for input: 20 minutes (stuck), 2 minutes (not yet), and an hour but expired since.
  const stuck = await scripted('deploy', 'alice', ask, new Date(stuckSince.getTime() - 10 * MINUTE_MS), [0, 10 * MINUTE_MS]);
  await scripted('deploy', 'carol', ask, ago(5), [0, 3 * MINUTE_MS]);
  const expired = await scripted('deploy', 'dave', ask, ago(120), [0, 60 * MINUTE_MS]);
  expect(await store.setTtl(expired, 0)).toBe(true);
  ids = { rendered, stuck };
});

afterAll(async () => {
  await store?.close();
  await pool?.end();
});

/** The one cookbook block that contains `marker`, run; psql's :'task_id' bound to the rendered task. */
async function run(marker: string): Promise<Record<string, unknown>[]> {
  const matching = BLOCKS.filter((sql) => sql.includes(marker));
  expect(matching, `cookbook blocks containing ${marker}`).toHaveLength(1);
  const text = matching[0]!.replace(":'task_id'", '$1');
  return (await pool.query(text, text.includes('$1') ? [ids.rendered] : [])).rows;
}

/** bigint and numeric arrive as strings: as numbers, for comparing. */
const numbers = (row: Record<string, unknown>, ...keys: string[]) =>
  ({ ...row, ...Object.fromEntries(keys.map((key) => [key, row[key] === null ? null : Number(row[key])])) });

describe('the README history cookbook', () => {
  it('has the six queries this test checks, and no other', () => {
    expect(BLOCKS).toHaveLength(6);
  });

  it('a task’s timeline', async () => {
    const rows = (await run('FROM mcp_tasks.task_transitions')).map((row) => numbers(row, 'seq', 'previous_state_ms'));
    const start = hour(day1, 12).getTime();
    expect(rows).toEqual([
      { seq: 1, at: new Date(start), from_status: null, to_status: 'working', previous_state_ms: null, message: 'Task started' },
      { seq: 2, at: new Date(start + 1000), from_status: 'working', to_status: 'input_required', previous_state_ms: 1000, message: 'which format?' },
      { seq: 3, at: new Date(start + 3000), from_status: 'input_required', to_status: 'working', previous_state_ms: 2000, message: 'rendering' },
      { seq: 4, at: new Date(start + 8000), from_status: 'working', to_status: 'completed', previous_state_ms: 5000, message: 'Task completed' },
    ]);
  });

  it('tasks stuck in input_required: live, not expired, waiting more than 10 minutes', async () => {
    expect(await run("interval '10 minutes'")).toEqual([
      { task_id: ids.stuck, tool_name: 'deploy', owner: 'alice', waiting_since: stuckSince },
    ]);
  });

  it('failure rate per tool, the purged tasks included', async () => {
    const rows = (await run('failed_percent')).map((row) => numbers(row, 'settled', 'failed', 'failed_percent'));
    expect(rows).toEqual([
      { tool_name: 'crawl', settled: 2, failed: 1, failed_percent: 50 },
      { tool_name: 'render', settled: 4, failed: 1, failed_percent: 25 },
    ]);
  });

  it('p50 and p95 task duration per tool, the purged tasks included', async () => {
    const rows = (await run('percentile_cont')).map((row) => numbers(row, 'settled'));
    // Interpolated: render's durations are 4, 6, 8 and 10 s, crawl's 2 (purged) and 3 s.
    expect(rows).toEqual([
      { tool_name: 'crawl', settled: 2, p50_ms: 2500, p95_ms: 2950 },
      { tool_name: 'render', settled: 4, p50_ms: 7000, p95_ms: 9700 },
    ]);
  });

  it('tasks per owner per day, the purged tasks included', async () => {
    const rows = (await run('GROUP BY day, owner')).map((row) => numbers(row, 'tasks'));
    // Counted here from what the fixture created: the waiting tasks' day depends on the hour.
    const counts = new Map<string, { day: string; owner: string | null; tasks: number }>();
    for (const { owner, at } of created) {
      const day = at.toISOString().slice(0, 10);
      const entry = counts.get(`${day} ${owner}`) ?? { day, owner, tasks: 0 };
      entry.tasks++;
      counts.set(`${day} ${owner}`, entry);
    }
    const expected = [...counts.values()].sort((a, b) =>
      a.day !== b.day ? (a.day < b.day ? -1 : 1) : a.owner === null ? -1 : b.owner === null ? 1 : a.owner < b.owner ? -1 : 1,
    );
    expect(rows).toEqual(expected);
    const [first, second] = [day0, day1].map((day) => new Date(day).toISOString().slice(0, 10));
    expect(rows).toContainEqual({ day: first, owner: 'alice', tasks: 2 });
    expect(rows).toContainEqual({ day: second, owner: 'bob', tasks: 3 });
    expect(rows).toContainEqual({ day: second, owner: null, tasks: 1 });
  });

  // Last: its tasks would count in the queries above.
  it('tasks rescued per tool per day, by outcome', async () => {
    const leasing = new PostgresTaskStore({
      pool,
      reaper: false,
      leases: { heartbeatMs: 40, leaseMs: 200, tools: { crawl: { onLost: 'resume' } } },
    });
    try {
      for (const toolName of ['crawl', 'render', 'render']) await leasing.leases.createLeasedTask({ toolName });
      await leasing.leases.abandonLeases();
      expect(await leasing.leases.rescueLostTasks()).toEqual({ failed: 2, resumed: 1 });
    } finally {
      await leasing.close();
    }
    const rows = (await run('FROM mcp_tasks.task_rescues')).map((row) => numbers(row, 'resumed', 'failed'));
    const day = new Date().toISOString().slice(0, 10);
    expect(rows).toEqual([
      { day, tool_name: 'crawl', resumed: 1, failed: 0 },
      { day, tool_name: 'render', resumed: 0, failed: 2 },
    ]);
  });
});
