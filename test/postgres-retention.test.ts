/**
 * A task the PostgreSQL store ended because its outcome was over `maxPayloadBytes`, as plain SQL
 * sees it: failed with the fixed content-free error, and nothing kept of what it was given or
 * asked (arguments, meta, input requests), while the history of its transitions stays.
 */
import { describe, expect, it } from 'vitest';
import { usePostgresStores } from './support/postgres-stores.js';

const stores = usePostgresStores();
const LIMIT = 1024;
const oversized = { content: [{ type: 'text' as const, text: 'x'.repeat(2 * LIMIT) }] };

describe('a task ended for an oversized outcome', () => {
  it.each(['completion', 'failure'] as const)('by its %s keeps the fixed error and drops its arguments, meta and input requests', async (how) => {
    const schema = await stores.schema();
    const store = stores.open(schema, { limits: { maxPayloadBytes: LIMIT } });
    const other = (await store.createTask({ toolName: 'other' })).taskId;
    await store.requireInput(other, { kept: { method: 'roots/list' } });
    const { taskId } = await store.createTask({ toolName: 'big', arguments: { region: 'eu' } });
    await store.setTaskMeta(taskId, { trace: 'abc' });
    await store.requireInput(taskId, { answered: { method: 'roots/list' } });
    await store.applyInputResponses(taskId, { answered: { roots: [] } });
    await store.requireInput(taskId, { open: { method: 'roots/list' } });

    const ending =
      how === 'completion'
        ? store.completeTask(taskId, oversized)
        : store.failTask(taskId, { code: -32000, message: 'broke', data: oversized });
    await expect(ending).rejects.toMatchObject({ kind: 'retention_limit_exceeded' });

    const admin = stores.pool();
    const { rows: tasks } = await admin.query(
      `SELECT status, status_message, error, result, arguments, meta FROM ${schema}.tasks WHERE task_id = $1`,
      [taskId],
    );
    expect(tasks).toEqual([
      {
        status: 'failed',
        status_message: 'Task failed: retention limit exceeded',
        error: { code: -32603, message: 'Task payload exceeded configured retention limits' },
        result: null,
        arguments: null,
        meta: null,
      },
    ]);
    const { rows: requests } = await admin.query(`SELECT task_id, request_key FROM ${schema}.input_requests ORDER BY task_id`);
    expect(requests).toEqual([{ task_id: other, request_key: 'kept' }]);
    const { rows: history } = await admin.query(`SELECT to_status FROM ${schema}.task_history WHERE task_id = $1 ORDER BY id`, [taskId]);
    expect(history.map((row) => row.to_status)).toEqual(['working', 'input_required', 'working', 'input_required', 'failed']);
  });
});
