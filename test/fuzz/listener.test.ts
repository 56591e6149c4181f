/**
 * Nothing the listener does surfaces as an unhandled error or rejection, whatever its settings and
 * whatever its subscribers do: connection settings that cannot work, subscribers that throw, its
 * connection killed, and start and close at any moment. The SDK message queue, which also owns a
 * listener and serializes caller values, is held to the same.
 */
import fc from 'fast-check';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate, TaskStoreError } from '../../src/index.js';
import { LISTENER_APPLICATION_NAME, NotificationListener, type ListenerState } from '../../src/postgres/listener.js';
import { createPool } from '../../src/postgres/pool.js';
import { notificationChannel } from '../../src/postgres/schema-name.js';
import { PostgresTaskMessageQueue } from '../../src/sdk/index.js';
import { useTestDatabase } from '../support/test-database.js';
import { eventually, sleep, within } from '../support/time.js';
import { useNoUnhandledErrors } from '../support/unhandled-errors.js';
import { CallerBug, hostileString, THROWING_VALUES } from './hostile-values.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 25);
const SCHEMA = 'fuzz_listener';
const CHANNEL = notificationChannel(SCHEMA);

useNoUnhandledErrors();
const database = useTestDatabase();
let admin: pg.Pool;
beforeAll(async () => {
  admin = createPool(database.connectionString, 2);
  await migrate({ pool: admin, schema: SCHEMA });
});
afterAll(async () => {
  await admin.end();
});

/** A listener with subscribers that throw on every call, and one that records the states. */
function hostileListener(clientConfig: pg.ClientConfig): { listener: NotificationListener; states: ListenerState[]; payloads: string[] } {
  const listener = new NotificationListener({ clientConfig, channel: CHANNEL, minBackoffMs: 1, maxBackoffMs: 20, heartbeatMs: 20 });
  const states: ListenerState[] = [];
  const payloads: string[] = [];
  listener.onStateChange(() => {
    throw new CallerBug('state subscriber boom');
  });
  listener.onStateChange(({ state }) => states.push(state));
  listener.onNotification(() => {
    throw new CallerBug('notification subscriber boom');
  });
  listener.onNotification((payload) => payloads.push(payload));
  return { listener, states, payloads };
}

describe('the listener', () => {
  const settings = fc.oneof(
    fc.constantFrom<pg.ClientConfig>(
      { connectionString: 'postgres://postgres:secret@127.0.0.1:1/db' },
      { connectionString: 'postgres://postgres:secret@127.0.0.1:99999/db' },
      { connectionString: 'postgres://127.0.0.1:1/%E0%A4%A' },
      { connectionString: 'postgres://127.0.0.1:1/db?sslmode=verify-full&sslrootcert=/nonexistent/root.crt' },
      { host: '127.0.0.1', port: 1, connectionTimeoutMillis: 1 },
    ),
    hostileString.map((connectionString) => ({ connectionString })),
  );

  it('on settings that cannot work, with throwing subscribers, started and closed at any moment: keeps retrying quietly, and closes', async () => {
    await fc.assert(
      fc.asyncProperty(settings, fc.nat(60), async (clientConfig, closeAfterMs) => {
        const { listener, states } = hostileListener(clientConfig);
        listener.start();
        await sleep(closeAfterMs);
        await within('close()', listener.close());
        expect(listener.currentState).toBe('closed');
        expect(states.at(-1)).toBe('closed');
        listener.start(); // after close: does nothing
        await sleep(5);
        expect(listener.currentState).toBe('closed');
      }),
      { numRuns: RUNS },
    );
  });

  it('on working settings, with throwing subscribers: delivers to the others, survives its connection killed, and closes', async () => {
    const { listener, states, payloads } = hostileListener({ connectionString: database.connectionString });
    try {
      listener.start();
      await eventually('listening', async () => listener.isListening);
      await admin.query('SELECT pg_notify($1, $2)', [CHANNEL, 'first']);
      await eventually('the first notification', async () => payloads.includes('first'));
      for (let kill = 1; kill <= 3; kill++) {
        await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1', [LISTENER_APPLICATION_NAME]);
        await eventually('listening again', async () => listener.isListening && states.filter((state) => state === 'reconnecting').length >= kill);
      }
      await admin.query('SELECT pg_notify($1, $2)', [CHANNEL, 'after the kills']);
      await eventually('a notification after the kills', async () => payloads.includes('after the kills'));
    } finally {
      await within('close()', listener.close());
    }
  });
});

describe('the SDK message queue', () => {
  it('refuses a message whose serializing throws as invalid_input naming it, with the caller’s error as cause, and queues nothing', async () => {
    const queue = new PostgresTaskMessageQueue({ pool: admin, schema: SCHEMA });
    const taskId = 'f'.repeat(32);
    try {
      for (const [what, hostile] of Object.entries(THROWING_VALUES)) {
        const message = { type: 'notification', message: { jsonrpc: '2.0', method: 'm', params: { hostile: hostile() } }, timestamp: 1 };
        const outcome = await queue.enqueue(taskId, message as never).then(
          () => 'queued',
          (error: unknown) => error,
        );
        // Either it serializes (a proxy whose traps JSON never calls) and meets the unknown task,
        // or the caller's error comes back as invalid_input; never backend, never raw.
        expect(outcome, what).toBeInstanceOf(TaskStoreError);
        expect(outcome, what).toMatchObject({ kind: 'invalid_input' });
        const { message: text, cause } = outcome as TaskStoreError;
        if (!text.includes('not found')) {
          expect(text, what).toMatch(/^invalid message: reading it threw: /);
          expect(cause, what).toBeInstanceOf(CallerBug);
        }
      }
      expect((await admin.query(`SELECT count(*)::int AS n FROM ${SCHEMA}.task_messages`)).rows[0].n).toBe(0);
    } finally {
      await queue.close();
    }
  });
});
