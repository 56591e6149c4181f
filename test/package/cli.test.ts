/**
 * The `mcp-task-store` command, run in-process from source against the test database: migrate,
 * status, help and the errors every command shares. (cli-tasks.test.ts covers tasks, show, reap
 * and watch; cli-bin.test.ts runs every command from the installed package.)
 */
import { readdirSync, readFileSync } from 'node:fs';
import { Kysely, Migrator, PostgresDialect } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findFreePort } from '../../scripts/embedded-postgres.js';
import { commandUsage, USAGE } from '../../src/cli/cli.js';
import { migrate, PostgresTaskStore } from '../../src/index.js';
import { migratorOptions } from '../../src/postgres/migrate.js';
import { createPool } from '../../src/postgres/pool.js';
import { listening } from '../support/postgres-stores.js';
import { useTestDatabase } from '../support/test-database.js';
import { cli, databaseLine } from './cli-support.js';

const database = useTestDatabase();
const MIGRATIONS = readdirSync(new URL('../../migrations/', import.meta.url))
  .filter((file) => file.endsWith('.sql'))
  .sort()
  .map((file) => file.replace(/\.sql$/, ''));
const VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
const LATEST = MIGRATIONS.at(-1)!;

let pool: pg.Pool;
const env = () => ({ DATABASE_URL: database.connectionString });
const header = (schema: string) => `${databaseLine(database.connectionString)}, schema ${schema}`;

beforeAll(() => {
  pool = createPool(database.connectionString, 4);
});

afterAll(async () => {
  await pool.end();
});

/** The schema as an older version of the package left it: migrated up to `name`. */
async function migrateTo(schema: string, name: string): Promise<void> {
  const db = new Kysely<unknown>({ dialect: new PostgresDialect({ pool: createPool(database.connectionString, 1) }) });
  try {
    const { error } = await new Migrator({ db, ...migratorOptions(schema) }).migrateTo(name);
    if (error) throw error;
  } finally {
    await db.destroy();
  }
}

async function schemaExists(schema: string): Promise<boolean> {
  const { rowCount } = await pool.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]);
  return rowCount === 1;
}

describe('migrate', () => {
  it('lists what it would apply without creating anything, applies it once, then has nothing to apply', async () => {
    const schema = 'cli_migrate';
    expect(await cli(['migrate', '--dry-run', '--schema', schema], env())).toEqual({
      code: 0,
      out: [header(schema), ...MIGRATIONS.map((name) => `would apply ${name}`)],
      err: [],
    });
    expect(JSON.parse((await cli(['migrate', '--dry-run', '--json', '--schema', schema], env())).out.join(''))).toEqual({
      database: databaseLine(database.connectionString).slice('database '.length),
      schema,
      dryRun: true,
      applied: [],
      pending: MIGRATIONS,
    });
    expect(await schemaExists(schema)).toBe(false);

    expect(await cli(['migrate', '--schema', schema], env())).toEqual({
      code: 0,
      out: [header(schema), ...MIGRATIONS.map((name) => `applied ${name}`)],
      err: [],
    });
    expect((await cli(['migrate', '--schema', schema], env())).out).toEqual([header(schema), 'nothing to apply: every migration is applied']);
    const again = await cli(['migrate', '--json', '--schema', schema], env());
    expect(JSON.parse(again.out.join(''))).toMatchObject({ dryRun: false, applied: [], pending: [] });
  });

  it('prints a script that a DBA can run, which leaves the schema as migrate would', async () => {
    const schema = 'cli_print';
    const printed = await cli(['migrate', '--print', '--schema', schema], env());
    expect(printed.code).toBe(0);
    const script = printed.out.join('\n');
    expect(script).toMatch(new RegExp(`^-- mcp-task-store migrate --print: ${header(schema)}\\n-- applies ${MIGRATIONS.join(', ')}\\n`));
    expect(script).not.toContain('{{schema}}');
    expect(await schemaExists(schema)).toBe(false);

    await pool.query(script); // one simple query: the whole script, in its own transaction
    const status = JSON.parse((await cli(['status', '--json', '--schema', schema], env())).out.join(''));
    expect(status).toMatchObject({ version: LATEST, pending: [] });
    expect(status.applied.map(({ name }: { name: string }) => name)).toEqual(MIGRATIONS);
    expect((await cli(['migrate', '--schema', schema], env())).out).toEqual([header(schema), 'nothing to apply: every migration is applied']);

    expect((await cli(['migrate', '--print', '--schema', schema], env())).out.join('\n')).toBe(
      `-- mcp-task-store migrate --print: ${header(schema)}\n-- nothing to apply: every migration is applied`,
    );
    expect(JSON.parse((await cli(['migrate', '--print', '--json', '--schema', schema], env())).out.join(''))).toMatchObject({ pending: [], sql: null });
  });

  it('prints only what a schema behind this version lacks, without creating the migration tables again', async () => {
    const schema = 'cli_print_behind';
    await migrateTo(schema, MIGRATIONS.at(-2)!);
    const printed = await cli(['migrate', '--print', '--json', '--schema', schema], env());
    const { pending, sql } = JSON.parse(printed.out.join('')) as { pending: string[]; sql: string };
    expect(pending).toEqual([LATEST]);
    expect(sql).not.toContain('CREATE TABLE IF NOT EXISTS');
    await pool.query(sql);
    expect(JSON.parse((await cli(['status', '--json', '--schema', schema], env())).out.join(''))).toMatchObject({ pending: [] });
  });

  it('refuses --print with --dry-run', async () => {
    expect(await cli(['migrate', '--print', '--dry-run'], env())).toEqual({
      code: 2,
      out: [],
      err: ['mcp-task-store: --dry-run and --print: choose one (see mcp-task-store migrate --help)'],
    });
  });
});

describe('status', () => {
  it('counts tasks by status, expired rows, tombstones, the oldest working task and listener connections', async () => {
    const schema = 'cli_status';
    await migrate({ pool, schema });
    const store = new PostgresTaskStore({ pool, schema, reaper: false });
    try {
      await listening(store);
      const oldest = (await store.createTask({ toolName: 'crawl', owner: 'alice' })).taskId;
      await store.createTask({ toolName: 'crawl' });
      await store.requireInput((await store.createTask({ toolName: 'deploy' })).taskId, { ok: { method: 'elicitation/create', params: {} } });
      await store.completeTask((await store.createTask({ toolName: 'render' })).taskId, { content: [] });
      await store.failTask((await store.createTask({ toolName: 'render' })).taskId, { code: 1, message: 'no' });
      await store.cancelTask((await store.createTask({ toolName: 'render' })).taskId);
      const expiring = (await store.createTask({ toolName: 'crawl', ttlMs: 60_000 })).taskId;
      await pool.query(`UPDATE ${schema}.tasks SET expires_at = now() - interval '1 second' WHERE task_id = $1`, [expiring]);
      await pool.query(`INSERT INTO ${schema}.tombstones (task_id, owner, expired_at) VALUES ('gone', NULL, now())`);
      await pool.query(`UPDATE ${schema}.tasks SET created_at = now() - interval '2 hours' WHERE task_id = $1`, [oldest]);

      const human = await cli(['status', '--schema', schema], env());
      expect(human).toMatchObject({ code: 0, err: [] });
      expect(human.out[0]).toBe(header(schema));
      expect(human.out[1]!.split('\n')).toEqual([
        `schema version  ${LATEST} (${MIGRATIONS.length} applied, none pending)`,
        'tasks           working 2, input_required 1, completed 1, failed 1, cancelled 1',
        'expired         1 awaiting the reaper',
        'tombstones      1',
        `oldest working  ${oldest} (crawl, owner alice), running for 2h 00m`,
        'listeners       1 connected (any schema of this database)',
        'runners         none running tasks',
        'rescued         0 resumed, 0 failed in the last day',
        'reaper          no reaper activity recorded',
      ]);

      const json = JSON.parse((await cli(['status', '--json', '--schema', schema], env())).out.join(''));
      expect(json).toEqual({
        database: expect.any(String),
        schema,
        version: LATEST,
        applied: MIGRATIONS.map((name) => ({ name, appliedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT[\d:.]+Z$/) })),
        pending: [],
        unknown: [],
        tasks: { working: 2, input_required: 1, completed: 1, failed: 1, cancelled: 1 },
        expired: 1,
        tombstones: 1,
        oldestWorking: { taskId: oldest, toolName: 'crawl', owner: 'alice', createdAt: expect.any(String), ageMs: expect.any(Number) },
        listeners: 1,
        reaper: [],
        leases: { runners: [], awaitingResume: 0, rescuedLastDay: { failed: 0, resumed: 0 } },
      });
      expect(json.oldestWorking.ageMs).toBeGreaterThanOrEqual(7_200_000);
    } finally {
      await store.close();
    }
  });

  it('reads reaper_activity where the schema has it, and says what a schema behind this version lacks', async () => {
    const schema = 'cli_status_reaper';
    await migrate({ pool, schema });
    await pool.query(`DELETE FROM ${schema}.kysely_migration WHERE name = $1`, [LATEST]);
    await pool.query(`INSERT INTO ${schema}.reaper_activity VALUES ('tombstone', '2025-06-01T12:00:00Z', '2025-06-01T12:00:01Z', 40, 1200),
                      ('purge', '2025-06-01T12:00:01Z', NULL, NULL, NULL)`);
    const human = await cli(['status', '--schema', schema], env());
    expect(human.code).toBe(0);
    const lines = human.out[1]!.split('\n');
    expect(lines[0]).toBe(`schema version  ${MIGRATIONS.at(-2)} (${MIGRATIONS.length - 1} applied, ${LATEST} pending)`);
    expect(lines.at(-1)).toBe(
      'reaper          purge started 2025-06-01T12:00:01Z, not finished (0 rows; 0 in all); tombstone last finished 2025-06-01T12:00:01Z (40 rows; 1200 in all)',
    );
    const json = JSON.parse((await cli(['status', '--json', '--schema', schema], env())).out.join(''));
    expect(json).toMatchObject({ version: MIGRATIONS.at(-2), pending: [LATEST] });
    expect(json.reaper).toEqual([
      { phase: 'purge', lastStartedAt: '2025-06-01T12:00:01.000Z', lastFinishedAt: null, lastRows: null, totalRows: null },
      { phase: 'tombstone', lastStartedAt: '2025-06-01T12:00:00.000Z', lastFinishedAt: '2025-06-01T12:00:01.000Z', lastRows: 40, totalRows: 1200 },
    ]);
    // The commands that read tasks want every migration.
    expect(await cli(['tasks', '--schema', schema], env())).toEqual({
      code: 1,
      out: [header(schema)],
      err: [`mcp-task-store: schema "${schema}" is behind this version of the package (not applied: ${LATEST}): run mcp-task-store migrate --schema ${schema}`],
    });
  });

  it('says where the schema came from: --schema, MCP_TASKS_SCHEMA, or the default', async () => {
    const url = database.connectionString;
    expect((await cli(['migrate', '--dry-run', '--database-url', url], {})).out[0]).toBe(
      `${databaseLine(url)}, schema mcp_tasks (the default; choose another with --schema)`,
    );
    expect((await cli(['migrate', '--dry-run', '--database-url', url], { MCP_TASKS_SCHEMA: 'from_env' })).out[0]).toBe(
      `${databaseLine(url)}, schema from_env (from MCP_TASKS_SCHEMA)`,
    );
    expect((await cli(['migrate', '--dry-run', '--database-url', url, '--schema', 'given'], { MCP_TASKS_SCHEMA: 'from_env' })).out[0]).toBe(
      `${databaseLine(url)}, schema given`,
    );
    // --database-url wins over DATABASE_URL.
    expect((await cli(['migrate', '--dry-run', '--database-url', url], { DATABASE_URL: 'postgres://nobody@127.0.0.1:1/nowhere' })).code).toBe(0);
  });
});

describe('errors', () => {
  it.each([
    [[], 'no command given (see mcp-task-store --help)'],
    [['upgrade'], 'unknown command upgrade (see mcp-task-store --help)'],
    [['status', 'now'], 'unexpected argument now (see mcp-task-store status --help)'],
    [['show'], 'missing <taskId> (see mcp-task-store show --help)'],
    [['status', '--schemas', 'x'], 'unknown option --schemas (see mcp-task-store status --help)'],
    [['tasks', '--limit'], '--limit needs a value (see mcp-task-store tasks --help)'],
    [['tasks', '--json=yes'], "Option '--json' does not take an argument (see mcp-task-store tasks --help)"],
    [['status', '--schema', 'Tasks; drop'], expect.stringMatching(/^invalid schema: must be a lowercase SQL identifier .* \(see mcp-task-store status --help\)$/)],
  ])('answers %j with one line and exit code 2', async (args, message) => {
    const result = await cli(args, env());
    expect(result).toEqual({ code: 2, out: [], err: [typeof message === 'string' ? `mcp-task-store: ${message}` : expect.stringMatching(/^mcp-task-store: /)] });
    if (typeof message !== 'string') expect(result.err[0]!.slice('mcp-task-store: '.length)).toEqual(message);
  });

  it('refuses to guess a database', async () => {
    expect(await cli(['status'], {})).toEqual({
      code: 2,
      out: [],
      err: ['mcp-task-store: no database: pass --database-url or set DATABASE_URL (see mcp-task-store status --help)'],
    });
  });

  it.each(['migrate', 'status', 'tasks', 'show 0123', 'reap', 'watch'])('%s reports an unreachable database in one line, without its password', async (command) => {
    const port = await findFreePort(); // nothing listens there
    const unreachable = { DATABASE_URL: `postgres://app:hunter2@127.0.0.1:${port}/app` };
    for (const json of [false, true]) {
      const result = await cli([...command.split(' '), ...(json ? ['--json'] : [])], unreachable);
      expect(result).toEqual({
        code: 1,
        out: json ? [] : [`database postgres://app@127.0.0.1:${port}/app, schema mcp_tasks (the default; choose another with --schema)`],
        err: [expect.stringMatching(/^mcp-task-store: database error: connect ECONNREFUSED 127\.0\.0\.1:\d+ \(ECONNREFUSED\)$/)],
      });
    }
  });

  it.each(['status', 'tasks', 'show 0123', 'reap', 'watch'])('%s refuses a schema that was never migrated, in one line', async (command) => {
    for (const json of [false, true]) {
      const result = await cli([...command.split(' '), '--schema', 'never_migrated', ...(json ? ['--json'] : [])], env());
      expect(result).toEqual({
        code: 1,
        out: json ? [] : [header('never_migrated')],
        err: ['mcp-task-store: schema "never_migrated" was never migrated: run mcp-task-store migrate --schema never_migrated'],
      });
    }
    expect(await schemaExists('never_migrated')).toBe(false);
  });
});

describe('help', () => {
  it('prints the usage, each command’s, and the version', async () => {
    expect(await cli(['--help'], {})).toEqual({ code: 0, out: [USAGE], err: [] });
    for (const name of ['migrate', 'status', 'tasks', 'show', 'reap', 'watch']) {
      expect(USAGE).toMatch(new RegExp(`\\n  ${name} +\\S`));
      const help = await cli([name, '--help'], {});
      expect(help.code).toBe(0);
      expect(help.out[0]).toMatch(new RegExp(`^Usage: mcp-task-store ${name} `));
      expect(help.out[0]).toContain('--json');
    }
    expect((await cli(['show', '--help'], {})).out).toEqual([commandUsage((await import('../../src/cli/commands/show.js')).showCommand)]);
    expect(await cli(['-v'], {})).toEqual({ code: 0, out: [VERSION], err: [] });
  });
});

describe('validate', () => {
  it('passes a migrated schema, lists what differs in a changed one and exits 1, in human and JSON form', async () => {
    const schema = 'cli_validate';
    await migrate({ pool, schema });
    expect(await cli(['validate', '--schema', schema], env())).toEqual({
      code: 0,
      out: [header(schema), 'valid: the schema is what this version expects'],
      err: [],
    });

    await pool.query(`DROP INDEX ${schema}.tasks_owner_created_idx; ALTER TABLE ${schema}.tasks SET (fillfactor = 100)`);
    const differences = [
      'table tasks: options autovacuum_vacuum_scale_factor=0.05, fillfactor=100, expected autovacuum_vacuum_scale_factor=0.05, fillfactor=85',
      'index tasks_owner_created_idx: missing',
    ];
    const failure = `mcp-task-store: schema "${schema}" differs from what this version expects: 2 differences`;
    expect(await cli(['validate', '--schema', schema], env())).toEqual({ code: 1, out: [header(schema), ...differences], err: [failure] });
    const json = await cli(['validate', '--schema', schema, '--json'], env());
    expect(json.code).toBe(1);
    expect(json.err).toEqual([failure]);
    expect(JSON.parse(json.out.join('\n'))).toEqual({ database: expect.any(String), schema, valid: false, differences });
  });

  it('says a schema that was never migrated is missing', async () => {
    const result = await cli(['validate', '--schema', 'cli_validate_none'], env());
    expect(result).toEqual({
      code: 1,
      out: [header('cli_validate_none'), 'schema cli_validate_none: missing'],
      err: ['mcp-task-store: schema "cli_validate_none" differs from what this version expects: 1 difference'],
    });
  });
});
