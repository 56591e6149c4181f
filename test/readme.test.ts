/** Every SQL block in the README runs against a migrated schema holding real tasks. */
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { createPool } from '../src/postgres/pool.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate, PostgresTaskStore } from '../src/index.js';
import { useTestDatabase } from './support/test-database.js';

const README = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
const SQL_BLOCKS = [...README.matchAll(/```sql\n([\s\S]*?)```/g)].map((match) => match[1]!);

const database = useTestDatabase();
let pool: pg.Pool;
let store: PostgresTaskStore;
let taskIds: Record<'completed' | 'asking' | 'failed', string>;

beforeAll(async () => {
  pool = createPool(database.connectionString, 10);
  await migrate({ pool, schema: 'mcp_tasks' });
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

describe('README SQL', () => {
  it('has the blocks this test knows', () => {
    expect(SQL_BLOCKS).toHaveLength(4);
  });

  it('reads a task history', async () => {
    const { rows } = await pool.query(bind(SQL_BLOCKS[0]!));
    expect(rows.map((row) => [row.from_status, row.to_status, row.message])).toEqual([
      [null, 'working', 'Task started'],
      ['working', 'input_required', 'which format?'],
      ['input_required', 'working', 'page 2 of 2'],
      ['working', 'completed', 'Task completed'],
    ]);
  });

  it('counts live tasks by status', async () => {
    const { rows } = await pool.query(SQL_BLOCKS[1]!);
    expect(rows.map((row) => [row.status, Number(row.count)])).toEqual([
      ['completed', 1],
      ['failed', 1],
      ['input_required', 1],
    ]);
  });

  it('lists open questions', async () => {
    const { rows } = await pool.query(SQL_BLOCKS[2]!);
    expect(rows).toEqual([{ task_id: taskIds.asking, owner: 'alice', request_key: 'approval', question: 'Deploy?' }]);
  });

  it('lists recent failures', async () => {
    const { rows } = await pool.query(SQL_BLOCKS[3]!);
    expect(rows).toMatchObject([{ task_id: taskIds.failed, tool_name: 'crawl', error: 'site unreachable' }]);
  });
});
