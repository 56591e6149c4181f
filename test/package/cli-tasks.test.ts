/**
 * The `mcp-task-store` commands that read and reap tasks (tasks, show, reap, watch), in-process
 * from source against the test database. Each test works in a schema of its own.
 */
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { migrate, PostgresTaskStore } from '../../src/index.js';
import { createPool } from '../../src/postgres/pool.js';
import { useTestDatabase } from '../support/test-database.js';
import { sleep, within } from '../support/time.js';
import { cli, databaseLine, startCli } from './cli-support.js';

const database = useTestDatabase();
let pool: pg.Pool;
let schemas = 0;
const stores: PostgresTaskStore[] = [];
const env = () => ({ DATABASE_URL: database.connectionString });
const header = (schema: string) => `${databaseLine(database.connectionString)}, schema ${schema}`;

beforeAll(() => {
  pool = createPool(database.connectionString, 6);
});

afterEach(async () => {
  await Promise.all(stores.splice(0).map((store) => store.close()));
});

afterAll(async () => {
  await pool.end();
});

async function storeOnFreshSchema(): Promise<{ schema: string; store: PostgresTaskStore }> {
  const schema = `cli_tasks_${++schemas}`;
  await migrate({ pool, schema });
  const store = new PostgresTaskStore({ pool, schema, reaper: false, listen: false });
  stores.push(store);
  return { schema, store };
}

async function json(args: string[]): Promise<any> {
  const result = await cli([...args, '--json'], env());
  expect(result).toMatchObject({ code: 0, err: [] });
  expect(result.out).toHaveLength(1);
  return JSON.parse(result.out[0]!);
}

describe('tasks', () => {
  it('pages through live tasks newest first, with a cursor that continues the same filters', async () => {
    const { schema, store } = await storeOnFreshSchema();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await store.createTask({ toolName: i % 2 ? 'odd' : 'even', owner: i === 4 ? '' : 'alice' })).taskId);
    await store.completeTask(ids[0]!, { content: [] });
    // Tasks made in one millisecond tie on created_at: spread them a minute apart, the first 3 hours back.
    for (const [i, id] of ids.entries()) {
      await pool.query(`UPDATE ${schema}.tasks SET created_at = now() - $2::int * interval '1 minute' WHERE task_id = $1`, [id, i === 0 ? 180 : 10 - i]);
    }
    const expired = (await store.createTask({ toolName: 'even', ttlMs: 60_000 })).taskId;
    await pool.query(`UPDATE ${schema}.tasks SET expires_at = now() - interval '1 second' WHERE task_id = $1`, [expired]);

    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: any = await json(['tasks', '--schema', schema, '--limit', '2', ...(cursor ? ['--cursor', cursor] : [])]);
      expect(page.tasks.length).toBeLessThanOrEqual(2);
      seen.push(...page.tasks.map((task: { taskId: string }) => task.taskId));
      cursor = page.nextCursor;
    } while (cursor);
    expect(seen).toEqual([...ids].reverse()); // the expired task is not listed

    const first = await json(['tasks', '--schema', schema, '--status', 'completed']);
    expect(first).toEqual({
      database: expect.any(String),
      schema,
      tasks: [
        {
          taskId: ids[0],
          status: 'completed',
          toolName: 'even',
          owner: 'alice',
          statusMessage: 'Task completed',
          createdAt: expect.any(String),
          lastUpdatedAt: expect.any(String),
          expiresAt: expect.any(String),
          lease: null,
        },
      ],
      nextCursor: null,
    });
    const ids_ = async (...filters: string[]) => (await json(['tasks', '--schema', schema, ...filters])).tasks.map((task: { taskId: string }) => task.taskId);
    expect(await ids_('--tool', 'odd')).toEqual([ids[3], ids[1]]);
    expect(await ids_('--owner', '')).toEqual([ids[4]]);
    expect(await ids_('--since', '1h')).toEqual([ids[4], ids[3], ids[2], ids[1]]);
    expect(await ids_('--since', '2999-01-01T00:00:00Z')).toEqual([]);
    expect(await ids_('--status', 'working', '--tool', 'even', '--owner', 'alice')).toEqual([ids[2]]);
  });

  it('prints a table, and the cursor of the next page under it', async () => {
    const { schema, store } = await storeOnFreshSchema();
    const a = (await store.createTask({ toolName: 'crawl', owner: 'alice' })).taskId;
    const b = (await store.createTask({ toolName: 'deploy' })).taskId;
    await store.setStatus(b, 'working', 'step 2 of 3\nretrying');
    const result = await cli(['tasks', '--schema', schema, '--limit', '1'], env());
    expect(result.code).toBe(0);
    expect(result.out[0]).toBe(header(schema));
    const lines = result.out[1]!.split('\n');
    expect(lines[0]).toMatch(/^TASK {30}STATUS +TOOL +OWNER +CREATED +UPDATED +RUNNER +MESSAGE$/);
    expect(lines[1]).toMatch(new RegExp(`^${b}  working +deploy +- +\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ +\\S+ +- +step 2 of 3 retrying$`));
    expect(lines.slice(2)).toEqual(['', expect.stringMatching(/^1 task; next page: --cursor \d+-[0-9a-f]{32}$/)]);
    const cursor = lines[3]!.split(' ').at(-1)!;
    const next = (await cli(['tasks', '--schema', schema, '--limit', '1', '--cursor', cursor], env())).out[1]!.split('\n');
    expect(next[1]).toContain(a);
    expect(next.at(-1)).toBe('1 task; no more pages');
    expect((await cli(['tasks', '--schema', schema, '--status', 'failed'], env())).out).toEqual([header(schema), 'no tasks match']);
  });

  it.each([
    [['--status', 'done'], '--status done: expected one of working, input_required, completed, failed, cancelled'],
    [['--limit', '0'], '--limit 0: expected a whole number from 1 to 1000'],
    [['--limit', '2x'], '--limit 2x: expected a whole number from 1 to 1000'],
    [['--since', 'yesterday'], '--since yesterday: expected an ISO time (2025-06-01T12:00:00Z) or a duration back from now (1h, 2d)'],
    [['--cursor', 'abc'], '--cursor abc: not a cursor this command printed'],
  ])('refuses %j in one line, exit code 2', async (args, message) => {
    expect(await cli(['tasks', ...args], env())).toEqual({ code: 2, out: [], err: [`mcp-task-store: ${message} (see mcp-task-store tasks --help)`] });
  });
});

describe('show', () => {
  it('shows a task, its input requests with their answers, and its history with the time in each status', async () => {
    const { schema, store } = await storeOnFreshSchema();
    const { taskId } = await store.createTask({ toolName: 'deploy', owner: 'alice', ttlMs: 3_600_000 });
    await store.requireInput(taskId, { approval: { method: 'elicitation/create', params: { message: 'Deploy?' } } }, 'waiting for approval');
    await store.applyInputResponses(taskId, { approval: { action: 'accept' } });
    await store.failTask(taskId, { code: -32603, message: 'cluster unreachable' });
    // Spread the transitions out, so that the durations are known.
    await pool.query(
      `UPDATE ${schema}.task_history AS h SET at = t.created_at + (n.i * interval '90 seconds')
         FROM (SELECT id, row_number() OVER (ORDER BY id) - 1 AS i FROM ${schema}.task_history WHERE task_id = $1) AS n, ${schema}.tasks AS t
        WHERE h.id = n.id AND t.task_id = $1`,
      [taskId],
    );

    const shown = await json(['show', taskId, '--schema', schema]);
    expect(shown).toEqual({
      database: expect.any(String),
      schema,
      task: {
        taskId,
        status: 'failed',
        toolName: 'deploy',
        owner: 'alice',
        statusMessage: 'Task failed: cluster unreachable',
        createdAt: expect.any(String),
        lastUpdatedAt: expect.any(String),
        expiresAt: expect.any(String),
        ttlMs: 3_600_000,
        pollIntervalMs: null,
        cancelRequestedAt: null,
        expired: false,
        error: { code: -32603, message: 'cluster unreachable' },
      },
      tombstone: null,
      lease: null,
      rescues: [],
      inputRequests: [
        {
          key: 'approval',
          state: 'answered',
          request: { method: 'elicitation/create', params: { message: 'Deploy?' } },
          response: { action: 'accept' },
          issuedAt: expect.any(String),
          settledAt: expect.any(String),
        },
      ],
      history: [
        { at: expect.any(String), fromStatus: null, toStatus: 'working', message: 'Task started', previousStateMs: null },
        { at: expect.any(String), fromStatus: 'working', toStatus: 'input_required', message: 'waiting for approval', previousStateMs: 90_000 },
        { at: expect.any(String), fromStatus: 'input_required', toStatus: 'working', message: expect.any(String), previousStateMs: 90_000 },
        { at: expect.any(String), fromStatus: 'working', toStatus: 'failed', message: 'Task failed: cluster unreachable', previousStateMs: 90_000 },
      ],
    });

    const human = await cli(['show', taskId, '--schema', schema], env());
    expect(human.code).toBe(0);
    expect(human.out[0]).toBe(header(schema));
    const text = human.out[1]!;
    expect(text).toMatch(new RegExp(`^task     ${taskId}\\nstatus   failed\\ntool     deploy\\nowner    alice\\n`));
    expect(text).toContain('\nttl      1h 00m, expires ');
    expect(text).toContain('\nerror    {"code":-32603,"message":"cluster unreachable"}\n');
    expect(text).toMatch(/\ninput requests\n  KEY +STATE +ISSUED +SETTLED +REQUEST +RESPONSE\n  approval +answered +\S+ +\S+ +\{"method":"elicitation\/create"/);
    expect(text).toMatch(/\n {2}\S+ +input_required +after 1m 30s working +waiting for approval\n/);
    expect(text).toMatch(/\n {2}\S+ +failed +after 1m 30s working +Task failed: cluster unreachable\n {2}failed after 4m 30s in all$/);
  });

  it('shows what the tombstone of an expired task keeps, and refuses an unknown task in one line', async () => {
    const { schema, store } = await storeOnFreshSchema();
    const { taskId } = await store.createTask({ toolName: 'crawl', owner: 'bob', ttlMs: 60_000 });
    await pool.query(`UPDATE ${schema}.tasks SET expires_at = now() - interval '1 second' WHERE task_id = $1`, [taskId]);
    expect((await cli(['show', taskId, '--schema', schema], env())).out[1]).toMatch(/\nstatus   working, expired: awaiting the reaper\n/);
    expect(await store.reapExpired()).toEqual({ tombstoned: 1, purged: 0 });

    const shown = await json(['show', taskId, '--schema', schema]);
    expect(shown).toMatchObject({ task: null, tombstone: { owner: 'bob', expiredAt: expect.any(String), tombstonedAt: expect.any(String) }, inputRequests: [] });
    expect(shown.history).toHaveLength(1);
    expect((await cli(['show', taskId, '--schema', schema], env())).out[1]).toMatch(
      new RegExp(`^task    ${taskId}\\nstatus  expired \\S+; a tombstone since \\S+, its content is gone\\nowner   bob\\n\\nhistory\\n`),
    );

    const unknown = 'f'.repeat(32);
    for (const format of [[], ['--json']]) {
      expect(await cli(['show', unknown, '--schema', schema, ...format], env())).toEqual({
        code: 1,
        out: format.length ? [] : [header(schema)],
        err: [`mcp-task-store: no task ${unknown} in schema ${schema}`],
      });
    }
  });
});

describe('reap', () => {
  it('tombstones expired tasks, purges old tombstones, then the history of tasks gone for good, showing progress through a backlog', async () => {
    const { schema, store } = await storeOnFreshSchema();
    for (let i = 0; i < 120; i++) await store.createTask({ toolName: 'crawl', ttlMs: 60_000 });
    await store.createTask({ toolName: 'crawl' }); // lives on
    await pool.query(`UPDATE ${schema}.tasks SET expires_at = now() - interval '1 hour' WHERE ttl_ms = 60000`);

    // The tombstones expired an hour ago: inside a 2-hour window, outside a 30-minute one.
    const first = await cli(['reap', '--schema', schema, '--batch-size', '50', '--tombstone-retention', '2h'], env());
    expect(first.code).toBe(0);
    expect(first.out).toEqual([header(schema), expect.stringMatching(/^tombstoned 120 expired tasks, purged 0 tombstones and the history of 0 tasks \(\S+\)$/)]);
    expect(first.err[0]).toBe('reaping: 50 tombstoned so far…');

    expect(await json(['reap', '--schema', schema, '--tombstone-retention', '2h'])).toMatchObject({ tombstoned: 0, purged: 0, historyPurged: 0 });
    const purged = await json(['reap', '--schema', schema, '--tombstone-retention', '30m']);
    expect(purged).toEqual({ database: expect.any(String), schema, tombstoned: 0, purged: 120, historyPurged: 0, durationMs: expect.any(Number) });
    const historyRows = async () => (await pool.query(`SELECT count(*)::int AS n FROM ${schema}.task_history`)).rows[0].n;
    expect(await historyRows()).toBe(121); // the history outlives the tombstones
    expect(await json(['reap', '--schema', schema, '--history-retention', '0s'])).toMatchObject({ purged: 0, historyPurged: 120 });
    expect(await historyRows()).toBe(1);
  });

  it('refuses a retention that is not a duration', async () => {
    expect((await cli(['reap', '--tombstone-retention', '5'], env())).err).toEqual([
      'mcp-task-store: --tombstone-retention 5: expected a duration such as 30s, 15m, 1h30m or 2d (see mcp-task-store reap --help)',
    ]);
  });
});

describe('watch', () => {
  it('shows a task expiring while it watches, though nothing announces an expiry, and once only', async () => {
    const { schema, store } = await storeOnFreshSchema();
    const { taskId } = await store.createTask({ toolName: 'brief', owner: 'bob', ttlMs: 60_000 });
    // Created a minute ago and untouched since, with 2 s to go: only its expiry can bring it up.
    await pool.query(
      `UPDATE ${schema}.tasks SET created_at = now() - interval '1 minute', last_updated_at = now() - interval '1 minute',
              ttl_ms = 62000, expires_at = now() + interval '2 seconds' WHERE task_id = $1`,
      [taskId],
    );
    const watch = startCli(['watch', '--schema', schema, '--json', '--interval', '200ms'], env());
    await within('the listener', watch.waitFor('err', /^watch: listening for notifications$/));
    await within('the expiry', watch.waitFor('out', new RegExp(`"change":"expired","taskId":"${taskId}"`)));
    expect(await store.reapExpired()).toEqual({ tombstoned: 1, purged: 0 });
    await sleep(600); // three re-reads, after the reap

    const result = await within('watch stopping', watch.stop());
    expect(result.out.map((line) => JSON.parse(line))).toEqual([
      expect.objectContaining({ change: 'expired', taskId, status: 'working', toolName: 'brief', owner: 'bob' }),
    ]);
  });

  it('prints one JSON line per change, notified or found by a re-read, and stops cleanly', async () => {
    const { schema, store } = await storeOnFreshSchema();
    const old = (await store.createTask({ toolName: 'old' })).taskId;
    await store.completeTask(old, { content: [] });
    const watch = startCli(['watch', '--schema', schema, '--json', '--interval', '200ms'], env());
    await within('the listener', watch.waitFor('err', /^watch: listening for notifications$/));

    const { taskId } = await store.createTask({ toolName: 'crawl', owner: 'alice' }); // found by a re-read
    await within('the creation', watch.waitFor('out', new RegExp(`"change":"created","taskId":"${taskId}"`)));
    await store.cancelTask(taskId, 'operator'); // notified
    await within('the cancellation', watch.waitFor('out', new RegExp(`"taskId":"${taskId}","status":"cancelled"`)));
    await store.cancelTask(old); // notified: a settled task's token, no timestamp changes
    await within('the late cancel request', watch.waitFor('out', new RegExp(`"taskId":"${old}","status":"completed"`)));
    await store.discardTask(taskId); // notified
    await within('the deletion', watch.waitFor('out', new RegExp(`"change":"deleted","taskId":"${taskId}"`)));

    const result = await within('watch stopping', watch.stop());
    expect(result.code).toBe(0);
    const changes = result.out.map((line) => JSON.parse(line));
    expect(changes).toEqual([
      {
        at: expect.any(String),
        change: 'created',
        taskId,
        status: 'working',
        previousStatus: null,
        toolName: 'crawl',
        owner: 'alice',
        statusMessage: 'Task started',
        cancelRequestedAt: null,
      },
      expect.objectContaining({ change: 'updated', taskId, status: 'cancelled', previousStatus: 'working', cancelRequestedAt: expect.any(String) }),
      expect.objectContaining({ change: 'updated', taskId: old, status: 'completed', cancelRequestedAt: expect.any(String) }),
      expect.objectContaining({ change: 'deleted', taskId, status: null, previousStatus: 'cancelled', toolName: 'crawl', owner: 'alice' }),
    ]);
  });

  it('redraws a view of the latest changes on a terminal, and logs one line per change elsewhere', async () => {
    const { schema, store } = await storeOnFreshSchema();
    const screen = startCli(['watch', '--schema', schema, '--interval', '200ms'], env(), { interactive: true });
    const log = startCli(['watch', '--schema', schema, '--interval', '200ms'], env());
    await within('the screen', screen.waitFor('out', /listener listening/));
    await within('the log', log.waitFor('err', /^watch: listening/));
    const { taskId } = await store.createTask({ toolName: 'crawl' });
    await within('the screen', screen.waitFor('out', new RegExp(`${taskId}  created`)));
    await within('the log', log.waitFor('out', new RegExp(`^\\S+  ${taskId}  created`)));
    await store.setStatus(taskId, 'input_required', 'which site?');
    await within('the screen', screen.waitFor('out', /working → input_required/));
    await within('the log', log.waitFor('out', /working → input_required/));
    const [shown, logged] = await Promise.all([screen.stop(), log.stop()]);

    const last = shown.out.at(-1)!;
    expect(last.startsWith(`\x1b[H\x1b[2J${header(schema)}\nlistener listening; re-read every 200ms; Ctrl-C to stop\n\nAT `)).toBe(true);
    expect(last.split('\n').slice(4)).toEqual([
      expect.stringMatching(new RegExp(`^\\S+  ${taskId}  updated  working → input_required  crawl  -      which site\\?$`)),
      expect.stringMatching(new RegExp(`^\\S+  ${taskId}  created  working  +crawl  -      Task started$`)),
    ]);
    expect(logged.out).toEqual([
      header(schema),
      'watching tasks (NOTIFY, and a re-read every 200ms); Ctrl-C to stop',
      expect.stringMatching(new RegExp(`^\\S+Z  ${taskId}  created  working +crawl  -  Task started$`)),
      expect.stringMatching(new RegExp(`^\\S+Z  ${taskId}  updated  working → input_required +crawl  -  which site\\?$`)),
    ]);
    expect([shown.code, logged.code]).toEqual([0, 0]);
  });
});
