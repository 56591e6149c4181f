/**
 * For the history tests: a schema of their own per test, stores whose reaper runs by hand only
 * (with the retention windows a test sets), and the pass report of a pass run by hand.
 */
import { expect } from 'vitest';
import { migrate, PostgresTaskStore, type ReaperOptions, type ReaperPass } from '../../src/index.js';
import { useTestResources } from './postgres-stores.js';
import { useTestDatabase } from './test-database.js';
import { within } from './time.js';

/** An automatic interval no test outlives: only the start-up pass runs. */
const NEVER_MS = 2 ** 31 - 1;

export function useHistoryStores() {
  const database = useTestDatabase();
  const resources = useTestResources(database);
  let schemas = 0;

  const rows = async <T = Record<string, unknown>>(text: string, values: unknown[] = []): Promise<T[]> =>
    (await resources.admin.query(text, values)).rows as T[];

  return {
    database,
    resources,
    rows,

    async freshSchema(): Promise<string> {
      const schema = `history_${++schemas}`;
      await migrate({ pool: resources.admin, schema });
      return schema;
    },

    /** A store with these reaper settings and no automatic pass but the start-up one, which it awaits. */
    async openStore(schema: string, reaper: ReaperOptions = {}): Promise<PostgresTaskStore> {
      const store = new PostgresTaskStore({ pool: resources.admin, schema, reaper: { intervalMs: NEVER_MS, ...reaper } });
      resources.stores.push(store);
      await within('the start-up reaper pass', new Promise((resolve) => store.onReaperPass(resolve)));
      return store;
    },

    /** One pass by hand, as its report tells it (reapExpired() returns only the contract's two counts). */
    async reap(store: PostgresTaskStore): Promise<ReaperPass> {
      let pass: ReaperPass | undefined;
      const stop = store.onReaperPass((outcome) => {
        if (!(outcome instanceof Error)) pass = outcome;
      });
      try {
        await store.reapExpired();
      } finally {
        stop();
      }
      return pass!;
    },

    /** Expires the task and runs a pass: tombstoned (and purged, with tombstoneRetentionMs 0). */
    async endTask(store: PostgresTaskStore, taskId: string): Promise<void> {
      expect(await store.setTtl(taskId, 0)).toBe(true);
      await store.reapExpired();
      expect((await store.taskPresence(taskId)).state).not.toBe('present');
    },

    async historyCount(schema: string, taskId: string): Promise<number> {
      const [row] = await rows<{ n: number }>(`SELECT count(*)::int AS n FROM ${schema}.task_history WHERE task_id = $1`, [taskId]);
      return row!.n;
    },
  };
}
