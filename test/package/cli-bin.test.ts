/**
 * The `mcp-task-store` bin as users run it: from the packed and installed package, as a child
 * process, against the test database. Every command in text and in --json, the failures an
 * operator meets (an unreachable database, an unknown task, a schema never migrated, a wrong
 * command line) as one line on stderr with a non-zero exit code, and watch stopping on a signal.
 * The finer cases run in-process: cli.test.ts and cli-tasks.test.ts.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findFreePort } from '../../scripts/embedded-postgres.js';
import { migrate, PostgresTaskStore } from '../../src/index.js';
import { createPool } from '../../src/postgres/pool.js';
import { useTestDatabase } from '../support/test-database.js';
import { eventually } from '../support/time.js';
import { MANIFEST, packAndInstall, type InstalledPackage } from './packed-package.js';
import { run, type RunResult } from './project-copy.js';

const database = useTestDatabase();
const [BIN] = Object.keys(MANIFEST.bin ?? {});
const SEEDED = 'bin_seeded';
let installed: InstalledPackage;
let pool: pg.Pool;
let taskIds: { asking: string; done: string };

beforeAll(async () => {
  expect(BIN).toBe('mcp-task-store');
  const seeding = (async () => {
    pool = createPool(database.connectionString, 4);
    await migrate({ pool, schema: SEEDED });
    const store = new PostgresTaskStore({ pool, schema: SEEDED, reaper: false, listen: false });
    const done = (await store.createTask({ toolName: 'render', owner: 'alice' })).taskId;
    await store.completeTask(done, { content: [] });
    const asking = (await store.createTask({ toolName: 'deploy' })).taskId;
    await store.requireInput(asking, { approval: { method: 'elicitation/create', params: { message: 'Deploy?' } } });
    await store.close();
    // Newest first: the older task a minute older, whatever the clock's resolution.
    await pool.query(`UPDATE ${SEEDED}.tasks SET created_at = created_at - interval '1 minute' WHERE task_id = $1`, [done]);
    taskIds = { asking, done };
  })();
  [installed] = await Promise.all([packAndInstall({ withPeers: false }), seeding]);
}, 600_000);

afterAll(async () => {
  await pool?.end();
  await installed?.remove();
});

function binPath(): string {
  return join(installed.consumer, 'node_modules', '.bin', BIN!);
}

function bin(args: string[], env: NodeJS.ProcessEnv = { DATABASE_URL: database.connectionString }): Promise<RunResult> {
  return run(binPath(), args, { cwd: installed.consumer, env: { PATH: process.env.PATH, ...env } });
}

/** A zero exit, nothing on stderr, and stdout as one JSON document. */
async function binJson(args: string[]): Promise<any> {
  const result = await bin([...args, '--json']);
  expect(result, result.stderr).toMatchObject({ code: 0, stderr: '' });
  return JSON.parse(result.stdout);
}

function lines(text: string): string[] {
  return text.split('\n').filter((line) => line !== '');
}

// Each case works in its own schema or only reads the seeded one, so they run side by side.
describe('the installed mcp-task-store bin', { timeout: 60_000, concurrent: true }, () => {
  it('prints its help, a command’s help and its version', async () => {
    const [help, tasksHelp, version] = await Promise.all([bin(['--help'], {}), bin(['tasks', '--help'], {}), bin(['--version'], {})]);
    expect(help).toMatchObject({ code: 0, stderr: '' });
    expect(help.stdout).toMatch(/^Usage: mcp-task-store <command> \[options\]\n/);
    expect(tasksHelp.stdout).toMatch(/^Usage: mcp-task-store tasks \[options\]\n[\s\S]*--cursor <cursor>[\s\S]*--json/);
    expect(version.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
  });

  it('migrates: a dry run, the migration, and the SQL a DBA would run', async () => {
    const dry = await bin(['migrate', '--dry-run', '--schema', 'bin_migrate']);
    expect(dry).toMatchObject({ code: 0, stderr: '' });
    expect(lines(dry.stdout)[1]).toBe('would apply 0001_tasks');
    const pending = (await binJson(['migrate', '--dry-run', '--schema', 'bin_migrate'])).pending as string[];
    expect(pending[0]).toBe('0001_tasks');

    const printed = await bin(['migrate', '--print', '--schema', 'bin_printed']);
    expect(printed).toMatchObject({ code: 0, stderr: '' });
    await pool.query(printed.stdout);
    expect(await binJson(['migrate', '--schema', 'bin_printed'])).toMatchObject({ applied: [], pending: [] });

    const applied = await bin(['migrate', '--schema', 'bin_migrate']);
    expect(lines(applied.stdout).slice(1)).toEqual(pending.map((name) => `applied ${name}`));
    expect(await binJson(['migrate', '--schema', 'bin_migrate'])).toMatchObject({ schema: 'bin_migrate', dryRun: false, applied: [], pending: [] });
  });

  it('validates: a schema the printed SQL made is what the package expects; one never migrated is not', async () => {
    const printed = await bin(['migrate', '--print', '--schema', 'bin_validate']);
    await pool.query(printed.stdout);
    const valid = await bin(['validate', '--schema', 'bin_validate']);
    expect(valid).toMatchObject({ code: 0, stderr: '' });
    expect(lines(valid.stdout)[1]).toBe('valid: the schema is what this version expects');
    expect(await binJson(['validate', '--schema', 'bin_validate'])).toMatchObject({ valid: true, differences: [] });

    const missing = await bin(['validate', '--schema', 'bin_validate_none', '--json']);
    expect(missing.code).toBe(1);
    expect(JSON.parse(missing.stdout)).toMatchObject({ valid: false, differences: ['schema bin_validate_none: missing'] });
    expect(missing.stderr).toBe('mcp-task-store: schema "bin_validate_none" differs from what this version expects: 1 difference\n');
  });

  it('shows the status', async () => {
    const human = await bin(['status', '--schema', SEEDED]);
    expect(human).toMatchObject({ code: 0, stderr: '' });
    expect(lines(human.stdout)).toEqual([
      expect.stringMatching(new RegExp(`^database postgres://\\S+, schema ${SEEDED}$`)),
      expect.stringMatching(/^schema version  \d{4}_\w+ \(\d+ applied, none pending\)$/),
      'tasks           working 0, input_required 1, completed 1, failed 0, cancelled 0',
      'expired         0 awaiting the reaper',
      'tombstones      0',
      'oldest working  none',
      expect.stringMatching(/^listeners       \d+ connected \(any schema of this database\)$/),
      'runners         none running tasks',
      'rescued         0 resumed, 0 failed in the last day',
      'reaper          no reaper activity recorded',
    ]);
    expect(await binJson(['status', '--schema', SEEDED])).toMatchObject({
      schema: SEEDED,
      pending: [],
      tasks: { working: 0, input_required: 1, completed: 1, failed: 0, cancelled: 0 },
      expired: 0,
      tombstones: 0,
      oldestWorking: null,
    });
  });

  it('lists tasks', async () => {
    const human = await bin(['tasks', '--schema', SEEDED, '--status', 'input_required']);
    expect(human).toMatchObject({ code: 0, stderr: '' });
    expect(lines(human.stdout).slice(1)).toEqual([
      expect.stringMatching(/^TASK +STATUS +TOOL +OWNER +CREATED +UPDATED +RUNNER +MESSAGE$/),
      expect.stringMatching(new RegExp(`^${taskIds.asking}  input_required  deploy  -  `)),
      '1 task; no more pages',
    ]);
    const page = await binJson(['tasks', '--schema', SEEDED, '--limit', '1']);
    expect(page.tasks.map((task: { taskId: string }) => task.taskId)).toEqual([taskIds.asking]);
    expect((await binJson(['tasks', '--schema', SEEDED, '--cursor', page.nextCursor])).tasks[0].taskId).toBe(taskIds.done);
  });

  it('shows a task, and refuses an unknown one in one line', async () => {
    const human = await bin(['show', taskIds.asking, '--schema', SEEDED]);
    expect(human).toMatchObject({ code: 0, stderr: '' });
    expect(human.stdout).toContain(`\ntask     ${taskIds.asking}\nstatus   input_required\n`);
    expect(human.stdout).toMatch(/\ninput requests\n {2}KEY .*\n {2}approval +outstanding /);
    expect(human.stdout).toMatch(/\nhistory\n[\s\S]*\n {2}input_required for \S+( \S+)? so far\n$/);
    expect(await binJson(['show', taskIds.done, '--schema', SEEDED])).toMatchObject({
      task: { taskId: taskIds.done, status: 'completed', owner: 'alice' },
      tombstone: null,
      inputRequests: [],
      history: [{ toStatus: 'working' }, { toStatus: 'completed' }],
    });

    const unknown = '0'.repeat(32);
    const [text, json] = await Promise.all([bin(['show', unknown, '--schema', SEEDED]), bin(['show', unknown, '--schema', SEEDED, '--json'])]);
    for (const result of [text, json]) {
      expect(result).toMatchObject({ code: 1, stderr: `mcp-task-store: no task ${unknown} in schema ${SEEDED}\n` });
    }
    expect(json.stdout).toBe('');
  });

  it('reaps', async () => {
    const schema = 'bin_reap';
    await migrate({ pool, schema });
    const store = new PostgresTaskStore({ pool, schema, reaper: false, listen: false });
    for (let i = 0; i < 3; i++) await store.createTask({ toolName: 'crawl', ttlMs: 60_000 });
    await store.close();
    await pool.query(`UPDATE ${schema}.tasks SET expires_at = now() - interval '1 hour'`);
    const human = await bin(['reap', '--schema', schema, '--tombstone-retention', '2h']);
    expect(human).toMatchObject({ code: 0, stderr: '' });
    expect(lines(human.stdout)[1]).toMatch(/^tombstoned 3 expired tasks, purged 0 tombstones and the history of 0 tasks \(\S+\)$/);
    expect(await binJson(['reap', '--schema', schema, '--history-retention', '0s'])).toMatchObject({ tombstoned: 0, purged: 3, historyPurged: 3 });
  });

  it.each([
    ['json', 'SIGINT'],
    ['text', 'SIGTERM'],
  ])('watches changes (as %s) and stops on %s with exit code 0', async (format, signal) => {
    const schema = `bin_watch_${signal.toLowerCase()}`;
    await migrate({ pool, schema });
    const child = spawn(binPath(), ['watch', '--schema', schema, '--interval', '200ms', ...(format === 'json' ? ['--json'] : [])], {
      cwd: installed.consumer,
      env: { PATH: process.env.PATH, DATABASE_URL: database.connectionString },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
    // A child process on a loaded machine: generous bounds.
    const waitFor = (what: string, holds: () => boolean) => eventually(what, async () => holds(), 20_000);

    await waitFor('the listener', () => stderr.includes('watch: listening for notifications'));
    const store = new PostgresTaskStore({ pool, schema, reaper: false, listen: false });
    const { taskId } = await store.createTask({ toolName: 'crawl' });
    await store.cancelTask(taskId);
    await store.close();
    await waitFor('the cancellation', () => stdout.includes('cancelled'));
    child.kill(signal as NodeJS.Signals);
    expect(await exited).toBe(0);

    expect(stderr).toBe('watch: listening for notifications\n');
    if (format === 'json') {
      const changes = lines(stdout).map((line) => JSON.parse(line));
      expect(changes.at(-1)).toMatchObject({ taskId, status: 'cancelled', toolName: 'crawl' });
    } else {
      expect(lines(stdout).slice(1, 2)).toEqual(['watching tasks (NOTIFY, and a re-read every 200ms); Ctrl-C to stop']);
      expect(lines(stdout).at(-1)).toMatch(new RegExp(`^\\S+Z  ${taskId}  \\w+ +(working → )?cancelled +crawl  -  `));
    }
  });

  it('reports an unreachable database in one line, without its password', async () => {
    const port = await findFreePort(); // nothing listens there
    const env = { DATABASE_URL: `postgres://app:hunter2@127.0.0.1:${port}/app` };
    const [text, json] = await Promise.all([bin(['status'], env), bin(['tasks', '--json'], env)]);
    for (const result of [text, json]) {
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(/^mcp-task-store: database error: connect ECONNREFUSED 127\.0\.0\.1:\d+ \(ECONNREFUSED\)\n$/);
      expect(result.stdout + result.stderr).not.toContain('hunter2');
    }
    expect(text.stdout).toBe(`database postgres://app@127.0.0.1:${port}/app, schema mcp_tasks (the default; choose another with --schema)\n`);
    expect(json.stdout).toBe('');
  });

  it('refuses a schema that was never migrated, and a wrong command line, in one line each', async () => {
    const [text, json, usage] = await Promise.all([
      bin(['status', '--schema', 'bin_never']),
      bin(['reap', '--schema', 'bin_never', '--json']),
      bin(['tasks', '--limit', 'all']),
    ]);
    for (const result of [text, json]) {
      expect(result).toMatchObject({
        code: 1,
        stderr: 'mcp-task-store: schema "bin_never" was never migrated: run mcp-task-store migrate --schema bin_never\n',
      });
    }
    expect(json.stdout).toBe('');
    expect(usage).toEqual({
      code: 2,
      stdout: '',
      stderr: 'mcp-task-store: --limit all: expected a whole number from 1 to 1000 (see mcp-task-store tasks --help)\n',
    });
  });
});
