/** Injecting faults from outside the store, as a DBA or a failover would. */
import pg from 'pg';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { LISTENER_APPLICATION_NAME } from '../../src/postgres/listener.js';
import { sleep } from '../support/time.js';

/** The application name of the test's own connections, which the faults spare. */
export const ADMIN_APPLICATION_NAME = 'fault-injector';

/** A pool for the test itself, marked so that {@link terminateBackends} spares it. */
export function useAdminPool(database: { readonly connectionString: string }): { readonly pool: pg.Pool } {
  let pool: pg.Pool | undefined;
  beforeAll(() => {
    pool = new pg.Pool({ connectionString: database.connectionString, application_name: ADMIN_APPLICATION_NAME, max: 4 });
    pool.on('error', () => {});
  });
  afterAll(async () => {
    await pool?.end();
  });
  return {
    get pool() {
      if (!pool) throw new Error('the admin pool exists once beforeAll has run');
      return pool;
    },
  };
}

/**
 * What a test opens (stores, then the pools they run on), closed after each test in reverse order:
 * stores before their pools.
 */
export function useClosedAfterEach(): { close(): Promise<void> }[] {
  const opened: { close(): Promise<void> }[] = [];
  afterEach(async () => {
    for (const resource of opened.splice(0).reverse()) await resource.close();
  });
  return opened;
}

/**
 * pg_terminate_backend on every other client connection to this database (`only: 'listener'`: on
 * the stores' listener connections alone). Returns how many it terminated.
 */
export async function terminateBackends(admin: pg.Pool, only?: 'listener'): Promise<number> {
  const { rows } = await admin.query<{ terminated: number }>(
    `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid))::int AS terminated
       FROM pg_stat_activity
      WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'
        AND application_name IS DISTINCT FROM $1
        AND ($2::text IS NULL OR application_name = $2)`,
    [ADMIN_APPLICATION_NAME, only === 'listener' ? LISTENER_APPLICATION_NAME : null],
  );
  return rows[0]!.terminated;
}

/** Terminates backends `rounds` times, `everyMs` apart; resolves with the total terminated. */
export async function keepTerminating(admin: pg.Pool, rounds: number, everyMs: number, only?: 'listener'): Promise<number> {
  let total = 0;
  for (let round = 0; round < rounds; round++) {
    await sleep(everyMs * (0.5 + Math.random()));
    total += await terminateBackends(admin, only);
  }
  return total;
}

/** Client connections to this database by application name, the test's own left out. */
export async function connectionsByApplication(admin: pg.Pool): Promise<Record<string, number>> {
  const { rows } = await admin.query<{ application_name: string; n: number }>(
    `SELECT application_name, count(*)::int AS n FROM pg_stat_activity
      WHERE datname = current_database() AND backend_type = 'client backend' AND application_name IS DISTINCT FROM $1
      GROUP BY application_name`,
    [ADMIN_APPLICATION_NAME],
  );
  return Object.fromEntries(rows.map((row) => [row.application_name, row.n]));
}
