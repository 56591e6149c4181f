/**
 * The PostgreSQL store's change feed across instances: a watch on one store hears transitions made
 * through another store on the same schema, by LISTEN/NOTIFY, and keeps hearing them (by polling)
 * when it cannot listen.
 */
import { describe, expect, it } from 'vitest';
import type { PostgresTaskStore } from '../src/index.js';
import { listening, usePostgresStores } from './support/postgres-stores.js';
import { eventually } from './support/time.js';

const result = { content: [{ type: 'text', text: 'done' }] };

async function recorder(store: PostgresTaskStore, taskIds: string[]) {
  const reported: string[] = [];
  const watch = await store.watchTasks(taskIds, (taskId) => reported.push(taskId));
  return {
    watch,
    async heard(taskId: string, what: string) {
      await eventually(what, async () => reported.includes(taskId));
      reported.splice(0);
    },
  };
}

describe('PostgresTaskStore change feed across instances', () => {
  const stores = usePostgresStores();

  it('hears input_required, settling and cancellation made through another instance', async () => {
    const schema = await stores.schema();
    const [watching, driving] = [stores.open(schema), stores.open(schema)] as const;
    await Promise.all([listening(watching), listening(driving)]);
    const asking = (await driving.createTask({ toolName: 'deploy' })).taskId;
    const cancelled = (await driving.createTask({ toolName: 'deploy' })).taskId;
    const changes = await recorder(watching, [asking, cancelled]);

    await driving.requireInput(asking, { approve: { method: 'roots/list' } });
    await changes.heard(asking, 'input_required from the other instance');
    await driving.applyInputResponses(asking, { approve: { roots: [] } });
    await driving.completeTask(asking, result);
    await changes.heard(asking, 'the completion from the other instance');
    await driving.cancelTask(cancelled, 'stop');
    await changes.heard(cancelled, 'the cancellation from the other instance');
    changes.watch.close();
  });

  it('flags watched open tasks so their settling is announced, and only those', async () => {
    const schema = await stores.schema();
    const store = stores.open(schema);
    const watched = (await store.createTask({ toolName: 'tool' })).taskId;
    const unwatched = (await store.createTask({ toolName: 'tool' })).taskId;
    const changes = await recorder(store, [watched]);
    const { rows } = await stores.pool().query(`SELECT task_id, awaited FROM ${schema}.tasks ORDER BY task_id`);
    expect(Object.fromEntries(rows.map((row) => [row.task_id, row.awaited]))).toEqual({ [watched]: true, [unwatched]: false });
    changes.watch.close();
  });

  it('keeps reporting without a listener (poll-only mode)', async () => {
    const schema = await stores.schema();
    const polling = stores.open(schema, { listen: false });
    const driving = stores.open(schema);
    const taskId = (await driving.createTask({ toolName: 'tool' })).taskId;
    const later = (await driving.createTask({ toolName: 'tool' })).taskId;
    const changes = await recorder(polling, [taskId]);
    // A second watch, opened while the poll runs, keeps it running.
    const second = await recorder(polling, [later]);
    await driving.failTask(taskId, { code: -32603, message: 'broke' });
    await changes.heard(taskId, 'a report while polling');
    await driving.cancelTask(later);
    await second.heard(later, 'a report to the second watch');
    changes.watch.close();
    second.watch.close();
  });
});
