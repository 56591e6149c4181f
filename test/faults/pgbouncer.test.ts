/**
 * The store behind PgBouncer in transaction pooling mode, where a session is not a connection:
 * no LISTEN, and (before PgBouncer 1.21) no named prepared statements. Two instances run with
 * `preparedStatements: false`, one polling only and one listening on a direct connection of its
 * own; they share three server connections. Lifecycles cross between them, lose nothing and
 * double nothing, waiters and tokens reach the other instance, and the row lock still serialises
 * racing callers.
 *
 * Needs the `pgbouncer` binary (Debian's package, which .ci/run installs); without it the file is
 * skipped, saying so.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate, PostgresTaskStore, TaskStoreError } from '../../src/index.js';
import { LISTENER_APPLICATION_NAME } from '../../src/postgres/listener.js';
import { findPgBouncer, startPgBouncer, type PgBouncer } from '../support/pgbouncer.js';
import { listening } from '../support/postgres-stores.js';
import { useTestDatabase } from '../support/test-database.js';
import { within } from '../support/time.js';
import { useNoUnhandledErrors } from '../support/unhandled-errors.js';
import { connectionsByApplication, useAdminPool } from './fault-tools.js';
import { Ledger } from './ledger.js';

const binary = findPgBouncer();
const SCHEMA = 'bounced';
/** Poll-only waiters wake within the backstop poll (1 s); leave room for a loaded machine. */
const POLL_BOUND_MS = 5_000;

useNoUnhandledErrors();
const database = useTestDatabase();
const admin = useAdminPool(database);

describe.skipIf(binary === null)(
  `behind PgBouncer in transaction mode${binary === null ? ' (skipped: no pgbouncer binary on PATH or in /usr/sbin; install Debian’s pgbouncer package, as .ci/run does)' : ''}`,
  () => {
    let bouncer: PgBouncer;
    let polling: PostgresTaskStore;
    let listeningDirectly: PostgresTaskStore;
    beforeAll(async () => {
      await migrate({ pool: admin.pool, schema: SCHEMA });
      bouncer = await startPgBouncer(binary!, database.connectionString, 3);
      const options = { connectionString: bouncer.url, schema: SCHEMA, preparedStatements: false, reaper: { intervalMs: 200 } } as const;
      polling = new PostgresTaskStore({ ...options, listen: false });
      listeningDirectly = new PostgresTaskStore({ ...options, listen: { connectionString: database.connectionString } });
      await within('the direct listener', listening(listeningDirectly));
    }, 60_000);
    afterAll(async () => {
      await polling?.close();
      await listeningDirectly?.close();
      await bouncer?.stop();
    });

    it('lifecycles across a polling and a listening instance lose nothing and apply nothing twice', async () => {
      const ledger = new Ledger({ stores: [polling, listeningDirectly] });
      await within('the lifecycles', ledger.runCount(24, 8), 60_000);
      expect(ledger.backendErrors).toBe(0);
      expect(ledger.completed).toBe(24);
      await ledger.verify(admin.pool, SCHEMA);
      // Two pools of ten were multiplexed onto PgBouncer's three server connections.
      const connections = await connectionsByApplication(admin.pool);
      const serverConnections = Object.entries(connections)
        .filter(([application]) => application !== LISTENER_APPLICATION_NAME)
        .reduce((sum, [, count]) => sum + count, 0);
      expect(serverConnections).toBeLessThanOrEqual(3);
    });

    it('waiters and tokens reach the other instance, by polling and by the direct listener', async () => {
      for (const [creator, other] of [
        [polling, listeningDirectly],
        [listeningDirectly, polling],
      ] as const) {
        const settled = await creator.createTask({ toolName: 'bounced' });
        const cancelled = await creator.createTask({ toolName: 'bounced' });
        const waiting = other.waitForCompletion(settled.taskId);
        expect(await creator.completeTask(settled.taskId, { content: [{ type: 'text', text: 'through the bouncer' }] })).toBe(true);
        expect((await within('the waiter on the other instance', waiting, POLL_BOUND_MS))?.result).toStrictEqual({
          content: [{ type: 'text', text: 'through the bouncer' }],
        });
        expect((await other.cancelTask(cancelled.taskId))?.status).toBe('cancelled');
        await within("the creator's token", cancelled.token.whenCancelled(), POLL_BOUND_MS);
      }
    });

    it('racing instances still take turns on the row: one of two conflicting requests is admitted', async () => {
      const { taskId } = await polling.createTask({ toolName: 'raced' });
      const outcomes = await Promise.allSettled(
        Array.from({ length: 8 }, (_, index) =>
          (index % 2 ? polling : listeningDirectly).requireInput(taskId, {
            key: { method: 'elicitation/create', params: { message: `question ${index}` } },
          }),
        ),
      );
      const admitted = outcomes.filter((outcome) => outcome.status === 'fulfilled' && outcome.value === true);
      const refused = outcomes.filter((outcome) => outcome.status === 'rejected');
      expect(admitted).toHaveLength(1);
      expect(refused).toHaveLength(7);
      for (const outcome of refused) {
        expect((outcome as PromiseRejectedResult).reason).toBeInstanceOf(TaskStoreError);
        expect(((outcome as PromiseRejectedResult).reason as TaskStoreError).kind).toBe('invalid_transition');
      }
      const { rows } = await admin.pool.query(`SELECT count(*)::int AS n FROM ${SCHEMA}.input_requests WHERE task_id = $1`, [taskId]);
      expect(rows[0].n).toBe(1);
    });
  },
);
