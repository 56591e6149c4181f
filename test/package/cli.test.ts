/** The `mcp-task-store-postgres` command, run in-process from source against the test database. */
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { findFreePort } from '../../scripts/embedded-postgres.js';
import { runCli, USAGE } from '../../src/cli/cli.js';
import { createPool } from '../../src/postgres/pool.js';
import { useTestDatabase } from '../support/test-database.js';

const database = useTestDatabase();
const MIGRATIONS = readdirSync(new URL('../../migrations/', import.meta.url))
  .filter((file) => file.endsWith('.sql'))
  .sort()
  .map((file) => file.replace(/\.sql$/, ''));
const VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

async function cli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; out: string[]; err: string[] }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(args, env, { out: (line) => out.push(line), err: (line) => err.push(line) });
  return { code, out, err };
}

function databaseLine(): string {
  const url = new URL(database.connectionString);
  url.password = '';
  return `database ${url}`;
}

async function schemaExists(schema: string): Promise<boolean> {
  const pool = createPool(database.connectionString, 1);
  try {
    const { rowCount } = await pool.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]);
    return rowCount === 1;
  } finally {
    await pool.end();
  }
}

describe('migrate and status', () => {
  it('lists pending migrations without creating anything, migrates once, then lists them applied', async () => {
    const env = { DATABASE_URL: database.connectionString };
    const header = `${databaseLine()}, schema cli_status`;
    const width = Math.max(...MIGRATIONS.map((name) => name.length));
    const before = await cli(['status', '--schema', 'cli_status'], env);
    expect(before).toEqual({ code: 0, out: [header, ...MIGRATIONS.map((name) => `${name.padEnd(width)}  pending`)], err: [] });
    expect(await schemaExists('cli_status')).toBe(false);

    expect(await cli(['migrate', '--schema', 'cli_status'], env)).toEqual({
      code: 0,
      out: [header, ...MIGRATIONS.map((name) => `applied ${name}`)],
      err: [],
    });
    expect((await cli(['migrate', '--schema', 'cli_status'], env)).out).toEqual([header, 'nothing to apply: every migration is applied']);
    const after = await cli(['status', '--schema', 'cli_status'], env);
    expect(after.out.slice(1)).toEqual(MIGRATIONS.map((name) => expect.stringMatching(new RegExp(`^${name} +applied \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z$`))));
  });

  it('says where the schema came from: --schema, MCP_TASKS_SCHEMA, or the default', async () => {
    const url = database.connectionString;
    expect((await cli(['status', '--database-url', url])).out[0]).toBe(
      `${databaseLine()}, schema mcp_tasks (the default; choose another with --schema)`,
    );
    expect((await cli(['status', '--database-url', url], { MCP_TASKS_SCHEMA: 'from_env' })).out[0]).toBe(
      `${databaseLine()}, schema from_env (from MCP_TASKS_SCHEMA)`,
    );
    expect((await cli(['status', '--database-url', url, '--schema', 'given'], { MCP_TASKS_SCHEMA: 'from_env' })).out[0]).toBe(
      `${databaseLine()}, schema given`,
    );
  });

  it('prefers --database-url over DATABASE_URL', async () => {
    const result = await cli(['status', '--database-url', database.connectionString], { DATABASE_URL: 'postgres://nobody@127.0.0.1:1/nowhere' });
    expect(result.code).toBe(0);
  });
});

describe('errors', () => {
  it('refuses to guess a database', async () => {
    expect(await cli(['migrate'])).toEqual({
      code: 2,
      out: [],
      err: ['mcp-task-store-postgres: no database: pass --database-url or set DATABASE_URL', 'Run mcp-task-store-postgres --help for usage.'],
    });
  });

  it.each([
    [[], 'no command given'],
    [['upgrade'], 'unknown command upgrade'],
    [['migrate', 'now'], 'unexpected argument now'],
    [['migrate', '--schemas', 'x'], "Unknown option '--schemas'"],
  ])('answers %j with usage help and exit code 2', async (args, message) => {
    const result = await cli(args, { DATABASE_URL: database.connectionString });
    expect(result.code).toBe(2);
    expect(result.err[0]).toContain(message);
  });

  it('refuses a schema name that is not a plain identifier, touching nothing', async () => {
    const result = await cli(['migrate', '--schema', 'Tasks; drop'], { DATABASE_URL: database.connectionString });
    expect(result.code).toBe(1);
    expect(result.err).toEqual([expect.stringMatching(/^mcp-task-store-postgres: invalid schema: must be a lowercase SQL identifier/)]);
    expect(result.out).toEqual([]);
  });

  it('reports an unreachable database without its password', async () => {
    const port = await findFreePort(); // nothing listens there
    const result = await cli(['migrate'], { DATABASE_URL: `postgres://app:hunter2@127.0.0.1:${port}/app` });
    expect(result.code).toBe(1);
    expect(result.out).toEqual([`database postgres://app@127.0.0.1:${port}/app, schema mcp_tasks (the default; choose another with --schema)`]);
    expect(result.err).toEqual([expect.stringMatching(/^mcp-task-store-postgres: database error: connect ECONNREFUSED/)]);
    expect(result.err.join('')).not.toContain('hunter2');
  });
});

describe('help', () => {
  it('prints usage and the version', async () => {
    expect(await cli(['--help'])).toEqual({ code: 0, out: [USAGE], err: [] });
    expect(USAGE).toMatch(/migrate .*\n.*status /);
    expect(await cli(['-v'])).toEqual({ code: 0, out: [VERSION], err: [] });
  });
});
