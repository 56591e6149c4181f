/**
 * The README matches the code: every SQL block in it runs against a migrated schema holding real
 * tasks and finds rows, every column its table of tables names exists, and every repository path
 * it mentions exists. (test/package/tarball.test.ts runs its usage and command-line examples;
 * test/postgres-history-cookbook.test.ts the history cookbook's queries, on data of their own.)
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { createPool } from '../src/postgres/pool.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate, PostgresTaskStore } from '../src/index.js';
import { COOKBOOK, README, sqlBlocks } from './support/readme-sql.js';
import { useTestDatabase } from './support/test-database.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SQL_BLOCKS = sqlBlocks(README.replace(COOKBOOK, ''));
const SCHEMA = 'mcp_tasks';

const database = useTestDatabase();
let pool: pg.Pool;
let store: PostgresTaskStore;
let taskIds: Record<'completed' | 'asking' | 'failed', string>;

beforeAll(async () => {
  pool = createPool(database.connectionString, 10);
  await migrate({ pool, schema: SCHEMA });
  store = new PostgresTaskStore({ pool, reaper: false });
  const completed = (await store.createTask({ toolName: 'render_report' })).taskId;
  await store.setStatus(completed, 'working', 'page 1 of 2'); // progress: on the task row, not in the history
  await store.setStatus(completed, 'input_required', 'which format?');
  await store.setStatus(completed, 'working', 'page 2 of 2');
  await store.completeTask(completed, { content: [] });
  const asking = (await store.createTask({ toolName: 'deploy', owner: 'alice' })).taskId;
  await store.requireInput(asking, { approval: { method: 'elicitation/create', params: { message: 'Deploy?' } } });
  const failed = (await store.createTask({ toolName: 'crawl' })).taskId;
  await store.failTask(failed, { code: -32603, message: 'site unreachable' });
  taskIds = { completed, asking, failed };
});

afterAll(async () => {
  await store.close();
  await pool.end();
});

/** psql's `:'name'` variables become bound parameters. */
function bind(sql: string): { text: string; values: string[] } {
  const values: string[] = [];
  const text = sql.replace(/:'task_id'/g, () => {
    values.push(taskIds.completed);
    return `$${values.length}`;
  });
  return { text, values };
}

/** The one SQL block that contains `marker`. */
function block(marker: string): string {
  const matching = SQL_BLOCKS.filter((sql) => sql.includes(marker));
  expect(matching, `SQL blocks containing ${marker}`).toHaveLength(1);
  return matching[0]!;
}

describe('README SQL', () => {
  it.each(SQL_BLOCKS.map((sql) => [sql.split('\n')[0], sql]))('runs and finds rows: %s', async (_, sql) => {
    const { rows } = await pool.query(bind(sql!));
    expect(rows.length).toBeGreaterThan(0);
  });

  it('reads a task history', async () => {
    const { rows } = await pool.query(bind(block(":'task_id'")));
    expect(rows.map((row) => [row.from_status, row.to_status, row.message])).toEqual([
      [null, 'working', 'Task started'],
      ['working', 'input_required', 'which format?'],
      ['input_required', 'working', 'page 2 of 2'],
      ['working', 'completed', 'Task completed'],
    ]);
  });

  it('counts live tasks by status', async () => {
    const { rows } = await pool.query(block('GROUP BY status'));
    expect(rows.map((row) => [row.status, Number(row.count)])).toEqual([
      ['completed', 1],
      ['failed', 1],
      ['input_required', 1],
    ]);
  });

  it('lists open questions', async () => {
    const { rows } = await pool.query(block("r.state = 'outstanding'"));
    expect(rows).toEqual([{ task_id: taskIds.asking, owner: 'alice', request_key: 'approval', question: 'Deploy?' }]);
  });

  it('lists recent failures', async () => {
    const { rows } = await pool.query(block("h.to_status = 'failed'"));
    expect(rows).toMatchObject([{ task_id: taskIds.failed, tool_name: 'crawl', error: 'site unreachable' }]);
  });
});

describe('README tables', () => {
  /** The table of tables: first cell the table, last cell its columns, each in backticks. */
  function documentedTables(): Map<string, string[]> {
    const section = README.slice(README.indexOf('## Reading tasks in SQL'));
    const rows = section.slice(0, section.indexOf('\n\n', section.indexOf('| table |'))).split('\n');
    const tables = new Map<string, string[]>();
    for (const row of rows.filter((line) => /^\| `/.test(line))) {
      const cells = row.split('|').slice(1, -1);
      const names = (cell: string) => [...cell.matchAll(/`([a-z_]+)`/g)].map((match) => match[1]!);
      tables.set(names(cells[0]!)[0]!, names(cells[cells.length - 1]!).filter((name) => name !== '_meta'));
    }
    return tables;
  }

  it('names every table of the schema, and only columns that exist', async () => {
    const { rows } = await pool.query<{ table_name: string; column_name: string }>(
      `SELECT table_name, column_name FROM information_schema.columns
        WHERE table_schema = $1 AND table_name NOT LIKE 'kysely\\_%'`,
      [SCHEMA],
    );
    const actual = new Map<string, string[]>();
    for (const { table_name, column_name } of rows) actual.set(table_name, [...(actual.get(table_name) ?? []), column_name]);
    const documented = documentedTables();
    expect([...documented.keys()].sort()).toEqual([...actual.keys()].sort());
    for (const [table, columns] of documented) {
      expect(columns.length, `columns of ${table}`).toBeGreaterThan(0);
      expect(actual.get(table), `columns of ${table}`).toEqual(expect.arrayContaining(columns));
    }
  });
});

describe('README paths', () => {
  it('mentions no path outside the repository, and only repository paths that exist', () => {
    const mentioned = [...README.matchAll(/`([^`\s]*\/[^`\s]*)`|\]\(([^)]+)\)/g)].map((match) => (match[1] ?? match[2])!);
    expect(mentioned.filter((path) => path.startsWith('../') || path.includes('/../'))).toEqual([]);
    const repositoryPaths = mentioned.filter((path) => /^(src|test|scripts|migrations|\.ci)\//.test(path));
    expect(repositoryPaths.length).toBeGreaterThan(0);
    expect(repositoryPaths.filter((path) => !existsSync(join(ROOT, path)))).toEqual([]);
  });
});
