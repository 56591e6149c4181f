/**
 * The database server stopped and started again under two store instances, with waiters pending,
 * tokens held and lifecycles in flight. While it is down every call fails fast with `backend`
 * while waiters keep waiting; once it is back, waiters resolve, tokens rise, and nothing the
 * callers were told is lost or doubled. Also down for seconds, with calls in flight on the pool
 * (a caller's, with no error listener of its own) and the listeners, and every kind of waiter
 * pending (completions, a runner awaiting answers, the SDK queue's message wait), each resolved
 * by what another instance does after the restart.
 *
 * The server is an embedded PostgreSQL of this file's own (the run's shared server must not stop),
 * so this runs wherever the suite does.
 */
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { migrate, PostgresTaskStore } from '../../src/index.js';
import { PostgresTaskMessageQueue } from '../../src/sdk/index.js';
import { LISTENER_APPLICATION_NAME } from '../../src/postgres/listener.js';
import { listening } from '../support/postgres-stores.js';
import { startRestartableServer, type RestartableServer } from '../support/restartable-server.js';
import { BOUND_MS, eventually, stillPending, within } from '../support/time.js';
import { useNoUnhandledErrors } from '../support/unhandled-errors.js';
import { Ledger } from './ledger.js';

const SCHEMA = 'restarted';

useNoUnhandledErrors();
let server: RestartableServer;
beforeAll(async () => {
  server = await startRestartableServer();
  await migrate({ connectionString: server.adminUrl, schema: SCHEMA });
}, 120_000);
// A test that fails during its outage would otherwise leave the next one a stopped server.
afterEach(async () => {
  await server.ensureStarted();
}, 120_000);
afterAll(async () => {
  await server?.remove();
});

/** Retries `call` while it fails with `backend`: the server is coming back. */
async function onceBack<T>(call: () => Promise<T>): Promise<T> {
  return within(
    'a call after the restart',
    (async () => {
      for (;;) {
        try {
          return await call();
        } catch (error) {
          if ((error as { kind?: string }).kind !== 'backend') throw error;
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      }
    })(),
    30_000,
  );
}

describe('a server restart', () => {
  it('calls fail fast while it is down, waiters resolve after, nothing is lost or applied twice', async () => {
    const options = { connectionString: server.adminUrl, schema: SCHEMA, reaper: { intervalMs: 100 } };
    const a = new PostgresTaskStore(options);
    const b = new PostgresTaskStore(options);
    try {
      await Promise.all([within('A listening', listening(a)), within('B listening', listening(b))]);

      // Tasks created and awaited on A, to be settled on B once the server is back.
      const created = await Promise.all(Array.from({ length: 12 }, () => a.createTask({ toolName: 'restart', ttlMs: 3_600_000 })));
      const waits = created.map(({ taskId }) => {
        const promise = a.waitForCompletion(taskId);
        promise.catch(() => {}); // awaited after the restart
        return { promise };
      });

      let restarted!: () => void;
      const restartDone = new Promise<void>((resolve) => (restarted = resolve));
      const ledger = new Ledger({ stores: [a, b], retryForMs: 30_000 });
      const workload = ledger.runUntil(restartDone, 4);
      await within('lifecycles before the restart', (async () => {
        while (ledger.completed < 8) await new Promise((resolve) => setTimeout(resolve, 10));
      })(), 20_000);

      await server.stop();
      for (const [what, call] of [
        ['createTask', () => b.createTask({ toolName: 'while down' })],
        ['getTask', () => a.getTask(created[0]!.taskId)],
        ['completeTask', () => b.completeTask(created[0]!.taskId, { content: [] })],
        ['listTasks', () => a.listTasks()],
      ] as const) {
        const failure = await within(`${what} while the server is down`, (call as () => Promise<unknown>)().then(() => null, (error: unknown) => error), BOUND_MS);
        expect(failure, `${what} while the server is down`).toMatchObject({ name: 'TaskStoreError', kind: 'backend' });
      }
      expect(await stillPending(Promise.race(waits.map((wait) => wait.promise)), 200), 'the waiters keep waiting').toBe(true);
      expect(created.some(({ token }) => token.isCancelled), 'no token raised by the outage').toBe(false);

      await server.start();
      const [toCancel, toComplete] = [created.slice(0, 4), created.slice(4)];
      for (const { taskId } of toComplete) expect(await onceBack(() => b.completeTask(taskId, { content: [{ type: 'text', text: taskId }] }))).toBe(true);
      for (const { taskId } of toCancel) expect((await onceBack(() => b.cancelTask(taskId, 'after the restart')))?.status).toBe('cancelled');

      const snapshots = await within('every waiter after the restart', Promise.all(waits.map((wait) => wait.promise)), 20_000);
      expect(snapshots.map((snapshot) => snapshot?.task.status)).toStrictEqual([...toCancel.map(() => 'cancelled'), ...toComplete.map(() => 'completed')]);
      for (const [index, snapshot] of snapshots.entries()) {
        if (index >= toCancel.length) expect(snapshot?.result).toStrictEqual({ content: [{ type: 'text', text: created[index]!.taskId }] });
      }
      await within('tokens of the tasks cancelled on B', Promise.all(toCancel.map(({ token }) => token.whenCancelled())), 20_000);
      expect(toComplete.some(({ token }) => token.isCancelled), 'completed tasks keep their tokens down').toBe(false);

      restarted();
      await within('the lifecycles in flight finishing', workload, 60_000);
      expect(ledger.backendErrors, 'lifecycles saw the outage').toBeGreaterThan(0);
      expect(ledger.completed).toBeGreaterThan(8);
      const admin = new pg.Pool({ connectionString: server.adminUrl, max: 2 });
      try {
        await ledger.verify(admin, SCHEMA);
      } finally {
        await admin.end();
      }
      await within('A listening again', listening(a), 20_000);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it('a stop with calls in flight on the pool and a listener reconnecting: the calls end as backend errors, and waiters begun just before resolve after', async () => {
    const options = { connectionString: server.adminUrl, schema: SCHEMA, reaper: false as const, lockTimeoutMs: 20_000 };
    const a = new PostgresTaskStore(options);
    const b = new PostgresTaskStore(options);
    const locker = new pg.Client({ connectionString: server.adminUrl, application_name: 'lock holder' });
    locker.on('error', () => {}); // the stop ends its session
    try {
      await Promise.all([within('A listening', listening(a)), within('B listening', listening(b))]);
      const created = await Promise.all(Array.from({ length: 6 }, () => a.createTask({ toolName: 'in flight', ttlMs: 3_600_000 })));
      const ids = created.map(({ taskId }) => taskId);
      const changed = new Set<string>();
      const watch = await b.watchTasks(ids, (taskId) => changed.add(taskId));

      // On the pool: a completion waiting for the row lock another session holds.
      await locker.connect();
      await locker.query('BEGIN');
      await locker.query(`SELECT 1 FROM ${SCHEMA}.tasks WHERE task_id = $1 FOR UPDATE`, [ids[0]]);
      const blocked = b.completeTask(ids[0]!, { content: [] }).then((applied) => ({ applied }), (error: unknown) => error);
      expect(await stillPending(blocked, 100), 'the completion waits for the lock').toBe(true);
      // On the listeners: their connections ended, so both are reconnecting as the server stops.
      await locker.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1", [LISTENER_APPLICATION_NAME]);
      const waits = ids.map((taskId) => {
        const promise = a.waitForCompletion(taskId);
        promise.catch(() => {}); // awaited after the restart
        return promise;
      });
      // Registered (their tasks flagged awaited) before the stop: a wait begun as the server goes
      // down may find it refusing connections, and fail fast like any call then.
      await within('the waits registered', (async () => {
        for (;;) {
          const { rows } = await locker.query(`SELECT count(*) FILTER (WHERE awaited)::int AS n FROM ${SCHEMA}.tasks WHERE task_id = ANY($1)`, [ids]);
          if (rows[0].n === ids.length) return;
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
      })());

      await server.stop();
      // The shutdown ends the lock holder's session too: the call either got the row first and
      // committed, or lost its own session to the shutdown. Never both, never neither.
      const inFlight = await within('the blocked completion ending', blocked, BOUND_MS);
      const appliedBeforeTheStop = (inFlight as { applied?: boolean }).applied === true;
      if (!appliedBeforeTheStop) expect(inFlight, 'the call in flight').toMatchObject({ name: 'TaskStoreError', kind: 'backend' });
      // A completion that committed before the stop may be heard by A's listener, if it was back
      // by then: that one waiter may resolve. The others' tasks are open, so theirs keep waiting.
      const open = appliedBeforeTheStop ? waits.slice(1) : waits;
      expect(await stillPending(Promise.race(open), 300), 'the waiters keep waiting').toBe(true);

      await server.start();
      const result = (taskId: string) => (taskId === ids[0] && appliedBeforeTheStop ? { content: [] } : { content: [{ type: 'text' as const, text: taskId }] });
      for (const taskId of ids) {
        expect(await onceBack(() => b.completeTask(taskId, result(taskId))), taskId).toBe(!(taskId === ids[0] && appliedBeforeTheStop));
      }
      const snapshots = await within('every waiter after the restart', Promise.all(waits), 20_000);
      expect(snapshots.map((snapshot) => snapshot?.result)).toStrictEqual(ids.map(result));
      await within('A and B listening again', Promise.all([listening(a), listening(b)]), 20_000);
      expect([...changed].sort(), 'the change feed reported every completion').toStrictEqual([...ids].sort());
      watch.close();
    } finally {
      await locker.end().catch(() => {});
      await Promise.all([a.close(), b.close()]);
    }
  });

  it('down for seconds with calls in flight on the pool and the listeners and every kind of waiter pending: the process survives, and every waiter resolves once another instance acts after the restart', async () => {
    // The caller's pool has no 'error' listener of its own: its connections dying in the outage
    // must not crash the process, since the store and the queue on it listen for them.
    const callerPool = new pg.Pool({ connectionString: server.adminUrl, max: 4 });
    const options = { schema: SCHEMA, reaper: false as const, lockTimeoutMs: 20_000 };
    const a = new PostgresTaskStore({ ...options, pool: callerPool });
    const b = new PostgresTaskStore({ ...options, connectionString: server.adminUrl });
    const queueA = new PostgresTaskMessageQueue({ pool: callerPool, schema: SCHEMA });
    const queueB = new PostgresTaskMessageQueue({ connectionString: server.adminUrl, schema: SCHEMA });
    const locker = new pg.Client({ connectionString: server.adminUrl, application_name: 'lock holder' });
    locker.on('error', () => {}); // the stop ends its session
    try {
      await within('both stores listening', Promise.all([listening(a), listening(b)]));
      await eventually('queue A listening', async () => queueA.listening);
      const make = (n: number) => Promise.all(Array.from({ length: n }, () => a.createTask({ toolName: 'outage', ttlMs: 3_600_000 }).then(({ taskId }) => taskId)));
      const [awaited, singles, ticking] = await Promise.all([make(4), make(4), make(6)]);
      const [asking, queued, locked, notifiedAtStop] = singles as [string, string, string, string];

      // The waiters: completions, a runner waiting for its task's answers, a tasks/result waiting for a message.
      const completions = [...awaited, asking, locked, notifiedAtStop].map((taskId) => quiet(a.waitForCompletion(taskId)));
      await a.requireInput(asking, { q: { method: 'elicitation/create', params: { message: 'go on?' } } });
      let answered!: () => void;
      const resumed = new Promise<void>((resolve) => (answered = resolve));
      const watch = await a.watchTasks([asking], () => void a.getTask(asking).then((task) => task?.status === 'working' && answered(), () => {}));
      const message = quiet(queueA.waitForMessage(queued, undefined));
      await eventually('the waits registered', async () => {
        const { rows } = await callerPool.query(`SELECT count(*) FILTER (WHERE awaited)::int AS n FROM ${SCHEMA}.tasks WHERE task_id = ANY($1)`, [[...awaited, asking, locked, notifiedAtStop]]);
        return rows[0].n === 7;
      });

      // In flight as the server stops: a completion blocked on a row lock (pool), a burst of
      // progress on the caller's pool, and a completion whose NOTIFY races the shutdown (listeners).
      await locker.connect();
      await locker.query('BEGIN');
      await locker.query(`SELECT 1 FROM ${SCHEMA}.tasks WHERE task_id = $1 FOR UPDATE`, [locked]);
      const blocked = settled(b.completeTask(locked, { content: [] }));
      expect(await stillPending(blocked, 100), 'the completion waits for the lock').toBe(true);
      const burst = ticking.map((taskId) => settled(a.setStatus(taskId, 'working', 'tick')));
      const racing = settled(b.completeTask(notifiedAtStop, { content: [] }));
      await server.stop();

      const down = Date.now();
      for (const call of [blocked, racing, ...burst]) {
        const outcome = await within('a call in flight at the stop', call);
        if ('error' in outcome) expect(outcome.error, 'a call in flight at the stop').toMatchObject({ name: 'TaskStoreError', kind: 'backend' });
      }
      expect(await settled(a.getTask(asking)), 'a call while down').toMatchObject({ error: { name: 'TaskStoreError', kind: 'backend' } });
      // Down for a few seconds, every waiter still waiting.
      const waiting = Promise.race([...completions, resumed, message]);
      expect(await stillPending(waiting, Math.max(0, 3_000 - (Date.now() - down))), 'the waiters keep waiting').toBe(true);

      await server.start();
      const result = { content: [{ type: 'text' as const, text: 'after the restart' }] };
      for (const taskId of [...awaited, locked, notifiedAtStop]) await onceBack(() => b.completeTask(taskId, result));
      await onceBack(() => b.applyInputResponses(asking, { q: { action: 'accept', content: {} } }));
      await within('the runner on A seeing its answers', resumed, 20_000);
      await onceBack(() => b.completeTask(asking, result));
      await onceBack(() => queueB.enqueue(queued, { type: 'notification', message: { jsonrpc: '2.0', method: 'notifications/message', params: {} }, timestamp: Date.now() }));

      const snapshots = await within('every completion waiter after the restart', Promise.all(completions), 20_000);
      expect(snapshots.map((snapshot) => (snapshot as { task?: { status: string } })?.task?.status)).toStrictEqual(snapshots.map(() => 'completed'));
      await within('the message waiter after the restart', message, 20_000);
      await within('both stores listening again', Promise.all([listening(a), listening(b)]), 20_000);
      await eventually('queue A listening again', async () => queueA.listening, 20_000);
      // What the calls in flight were told holds: a progress that succeeded was kept.
      for (const [index, outcome] of (await Promise.all(burst)).entries()) {
        if ('applied' in outcome) expect((await onceBack(() => b.getTask(ticking[index]!)))?.statusMessage).toBe('tick');
      }
      watch.close();
    } finally {
      await locker.end().catch(() => {});
      await Promise.all([a.close(), b.close(), queueA.close(), queueB.close()]);
      await callerPool.end();
    }
  });
});

/** The call's outcome, never a rejection: what it resolved with, or what it rejected with. */
function settled<T>(call: Promise<T>): Promise<{ applied: T } | { error: unknown }> {
  return call.then((applied) => ({ applied }), (error: unknown) => ({ error }));
}

/** A promise awaited later: its rejection is not unhandled meanwhile. */
function quiet<T>(promise: Promise<T>): Promise<T> {
  promise.catch(() => {});
  return promise;
}
