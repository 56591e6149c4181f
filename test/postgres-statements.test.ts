/**
 * How the PostgreSQL store runs its statements: as named prepared statements, parsed once per
 * connection (or unnamed, with `preparedStatements: false`, for PgBouncer in transaction mode
 * before 1.21); not at all for an id this package never issues, which names no task anyway; and
 * what it makes of a row that plain SQL changed in a way the schema allows.
 */
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { PostgresTaskStore } from '../src/index.js';
import { resultText } from './conformance/harness.js';
import { countCheckouts } from './support/pool-checkouts.js';
import { usePostgresStores } from './support/postgres-stores.js';

const stores = usePostgresStores();

/** The statements prepared on the one connection of `pool`. */
async function preparedOn(pool: pg.Pool): Promise<number> {
  const { rows } = await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_prepared_statements');
  return rows[0]!.n;
}

describe('prepared statements', () => {
  it.each([
    ['by default, each statement is prepared once on a connection', undefined],
    ['with preparedStatements: false, none is', false],
  ] as const)('%s', async (_, preparedStatements) => {
    const schema = await stores.schema();
    const pool = new pg.Pool({ connectionString: stores.connectionString, max: 1 });
    const store = new PostgresTaskStore({ pool, schema, listen: false, reaper: false, preparedStatements });
    try {
      const { taskId } = await store.createTask({ toolName: 'build' });
      expect((await store.getTask(taskId))?.status).toBe('working');
      const afterOneRead = await preparedOn(pool);
      expect((await store.getTask(taskId))?.status).toBe('working');
      expect(await preparedOn(pool)).toBe(afterOneRead);
      expect(afterOneRead).toBe(preparedStatements === false ? 0 : 2);
    } finally {
      await store.close();
      await pool.end();
    }
  });
});

describe('an id this package never issues', () => {
  it('costs no statement: reads answer absent, writes answer not applied, a wait null, a watch nothing', async () => {
    const schema = await stores.schema();
    const pool = stores.pool();
    const store = stores.open(schema, { pool, listen: false });
    const statements = countCheckouts(pool);
    const id = 'not-an-id-of-ours';
    expect(await store.getTask(id)).toBeNull();
    expect(await store.taskPresence(id)).toStrictEqual({ state: 'missing' });
    expect(await store.waitForCompletion(id)).toBeNull();
    const watch = await store.watchTasks([id, id.toUpperCase()], () => {});
    watch.close();
    expect(await store.completeTask(id, resultText('done'))).toBe(false);
    expect(await store.cancelTask(id)).toBeNull();
    expect(await store.discardTask(id)).toBe(false);
    expect(statements()).toBe(0);
  });
});

describe('a row changed in plain SQL', () => {
  it('with its status message cleared, reads as a task without one', async () => {
    const schema = await stores.schema();
    const store = stores.open(schema, { listen: false });
    const { taskId } = await store.createTask({ toolName: 'build' });
    await stores.pool().query(`UPDATE ${schema}.tasks SET status_message = NULL WHERE task_id = $1`, [taskId]);
    const task = await store.getTask(taskId);
    expect(task?.status).toBe('working');
    expect(task && 'statusMessage' in task).toBe(false);
  });
});
