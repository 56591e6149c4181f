/**
 * PostgresTaskStore's metrics and logs: each instrument read back through an in-memory
 * OpenTelemetry SDK after real calls, the logger's listener and reaper lines, and what must never
 * reach either (task arguments, results, messages, ids, passwords). Without an SDK or a logger,
 * the same calls work and report nothing.
 */
import { metrics, type Attributes } from '@opentelemetry/api';
import { MeterProvider, MetricReader, type DataPoint, type Histogram } from '@opentelemetry/sdk-metrics';
import pg from 'pg';
import { describe, expect, test } from 'vitest';
import { PostgresTaskStore, TaskStoreError, type Logger, type ReapResult } from '../src/index.js';
import { listening, usePostgresStores } from './support/postgres-stores.js';
import { useStoreRoles } from './support/store-roles.js';
import { eventually, within } from './support/time.js';

const stores = usePostgresStores();
const storeRole = useStoreRoles(stores);
const HOUR_MS = 3_600_000;
const SECRETS = ['ARGUMENT-SENTINEL', 'RESULT-SENTINEL', 'MESSAGE-SENTINEL', 's3cret-pw'];

// -- Helpers ------------------------------------------------------------------------------------

/** Collects only when asked, so a test reads exactly what its calls recorded. */
class OnDemandReader extends MetricReader {
  protected override async onForceFlush(): Promise<void> {}
  protected override async onShutdown(): Promise<void> {}
}

interface Point {
  attributes: Attributes;
  value: number | Histogram;
}

/** A MeterProvider for one store, and a reader of its metrics by instrument name. */
function inMemoryMetrics() {
  const reader = new OnDemandReader();
  const meterProvider = new MeterProvider({ readers: [reader] });
  return {
    meterProvider,
    async read(): Promise<Map<string, { unit: string; points: Point[] }>> {
      const { resourceMetrics, errors } = await reader.collect();
      expect(errors).toEqual([]);
      const byName = new Map<string, { unit: string; points: Point[] }>();
      for (const metric of resourceMetrics.scopeMetrics.flatMap((scope) => scope.metrics)) {
        const dataPoints = metric.dataPoints as DataPoint<number | Histogram>[];
        const points = dataPoints.map(({ attributes, value }) => ({ attributes, value }));
        byName.set(metric.descriptor.name, { unit: metric.descriptor.unit, points });
      }
      return byName;
    },
  };
}

/** A counter's value per value of one attribute. */
function sums(points: Point[] | undefined, attribute: string): Record<string, number> {
  return Object.fromEntries((points ?? []).map((point) => [String(point.attributes[attribute]), point.value as number]));
}

/** The histogram of the point with exactly these attributes. */
function histogram(points: Point[] | undefined, attributes: Attributes = {}): Histogram | undefined {
  const point = points?.find((candidate) => JSON.stringify(candidate.attributes) === JSON.stringify(attributes));
  return point?.value as Histogram | undefined;
}

interface Line {
  level: keyof Logger;
  obj: object;
  msg: string | undefined;
}

function recordingLogger(): Logger & { lines: Line[] } {
  const lines: Line[] = [];
  const at = (level: keyof Logger) => (obj: object, msg?: string) => void lines.push({ level, obj, msg });
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

function firstPass(store: PostgresTaskStore): Promise<unknown> {
  return within('the start-up reaper pass', new Promise((resolve) => store.onReaperPass(resolve)));
}

async function awaitedInDatabase(pool: pg.Pool, schema: string, taskId: string): Promise<void> {
  await eventually('the waiter flagged the task', async () => {
    const { rows } = await pool.query(`SELECT awaited FROM ${schema}.tasks WHERE task_id = $1`, [taskId]);
    return rows[0]?.awaited === true;
  });
}

const text = (value: string) => ({ content: [{ type: 'text' as const, text: value }] });

// -- Metrics ------------------------------------------------------------------------------------

describe('metrics', () => {
  test('rescues are counted by outcome, and a rescued failure is a transition to failed', async () => {
    const telemetry = inMemoryMetrics();
    const store = stores.open(await stores.schema(), {
      meterProvider: telemetry.meterProvider,
      listen: false,
      leases: { heartbeatMs: 40, leaseMs: 200, rescueIntervalMs: 3_600_000, tools: { resumable: { onLost: 'resume' } } },
    });
    for (const toolName of ['render', 'render', 'resumable']) await store.leases.createLeasedTask({ toolName });
    await store.leases.abandonLeases();
    expect(await store.leases.rescueLostTasks()).toEqual({ failed: 2, resumed: 1 });
    const read = await telemetry.read();
    expect(read.get('mcp_task_store.rescues')?.unit).toBe('{task}');
    expect(sums(read.get('mcp_task_store.rescues')?.points, 'mcp_task_store.outcome')).toEqual({ failed: 2, resumed: 1 });
    expect(sums(read.get('mcp_task_store.transitions')?.points, 'mcp_task_store.status')).toEqual({ working: 3, failed: 2 });
  });

  test('transitions are counted by the status reached; a progress message is not a transition', async () => {
    const telemetry = inMemoryMetrics();
    const store = stores.open(await stores.schema(), {
      meterProvider: telemetry.meterProvider,
      listen: false,
      limits: { maxPayloadBytes: 1024 },
    });
    const question = { ok: { method: 'elicitation/create' as const, params: { message: 'ok?' } } };
    const { taskId } = await store.createTask({ toolName: 'render', arguments: { q: 'ARGUMENT-SENTINEL' } });
    await store.setStatus(taskId, 'working', 'page 1'); // progress
    await store.requireInput(taskId, question);
    await store.requireInput(taskId, question); // asked again while parked: no transition
    await store.applyInputResponses(taskId, { ok: { action: 'accept' } }); // resumes: working
    await store.setStatus(taskId, 'input_required', 'waiting on a person');
    await store.setStatus(taskId, 'working', 'carrying on');
    await store.completeTask(taskId, text('RESULT-SENTINEL'));
    expect(await store.cancelTask(taskId)).not.toBeNull(); // already terminal: no transition
    const other = await store.createTask({ toolName: 'render' });
    await store.cancelTask(other.taskId, 'MESSAGE-SENTINEL');
    const failed = await store.createTask({ toolName: 'render' });
    await store.failTask(failed.taskId, { code: -32603, message: 'MESSAGE-SENTINEL' });
    const answeredInPart = await store.createTask({ toolName: 'render' });
    await store.requireInput(answeredInPart.taskId, { a: question.ok, b: question.ok });
    await store.applyInputResponses(answeredInPart.taskId, { a: { action: 'accept' } }); // still parked
    const oversized = await store.createTask({ toolName: 'render' });
    await expect(store.completeTask(oversized.taskId, text('x'.repeat(2048)))).rejects.toMatchObject({ kind: 'retention_limit_exceeded' });

    const transitions = (await telemetry.read()).get('mcp_task_store.transitions');
    expect(transitions?.unit).toBe('{transition}');
    expect(sums(transitions?.points, 'mcp_task_store.status')).toEqual({
      working: 7,
      input_required: 3,
      completed: 1,
      cancelled: 1,
      // A failure, and an outcome over the limit.
      failed: 2,
    });
  });

  test('a woken waitForCompletion records its duration, outcome and wake delay', async () => {
    const telemetry = inMemoryMetrics();
    const schema = await stores.schema();
    const store = stores.open(schema, { meterProvider: telemetry.meterProvider });
    await listening(store);
    const { taskId } = await store.createTask({ toolName: 'build' });
    const started = performance.now();
    const waiting = store.waitForCompletion(taskId);
    await awaitedInDatabase(stores.pool(), schema, taskId);
    await store.completeTask(taskId, text('RESULT-SENTINEL'));
    expect((await within('the waiter', waiting))?.task.status).toBe('completed');
    const elapsedS = (performance.now() - started) / 1000;
    const aborted = new AbortController();
    const abandoned = await store.createTask({ toolName: 'build' });
    const abortedWait = store.waitForCompletion(abandoned.taskId, { signal: aborted.signal });
    aborted.abort(new Error('gave up'));
    await expect(abortedWait).rejects.toThrow('gave up');

    const read = await telemetry.read();
    const waits = read.get('mcp_task_store.wait.duration');
    expect(waits?.unit).toBe('s');
    const completed = histogram(waits?.points, { 'mcp_task_store.outcome': 'completed' });
    expect(completed?.count).toBe(1);
    expect(completed?.sum).toBeGreaterThan(0);
    expect(completed?.sum).toBeLessThanOrEqual(elapsedS);
    expect(histogram(waits?.points, { 'mcp_task_store.outcome': 'aborted' })?.count).toBe(1);
    const wake = read.get('mcp_task_store.wake.delay');
    expect(wake?.unit).toBe('s');
    expect(histogram(wake?.points)?.count).toBe(1);
    expect(histogram(wake?.points)?.sum).toBeGreaterThanOrEqual(0);
    expect(histogram(wake?.points)?.sum).toBeLessThan(elapsedS);
  });

  test('a wait on a task that had already settled records no wake delay', async () => {
    const telemetry = inMemoryMetrics();
    const store = stores.open(await stores.schema(), { meterProvider: telemetry.meterProvider, listen: false });
    const { taskId } = await store.createTask({ toolName: 'build' });
    await store.completeTask(taskId, text('done'));
    await new Promise((resolve) => setTimeout(resolve, 5));
    await store.waitForCompletion(taskId);
    const read = await telemetry.read();
    const waits = read.get('mcp_task_store.wait.duration')?.points;
    expect(histogram(waits, { 'mcp_task_store.outcome': 'completed' })?.count).toBe(1);
    expect(histogram(read.get('mcp_task_store.wake.delay')?.points)).toBeUndefined();
  });

  test('reaper passes: rows per phase, pass durations, failures', async () => {
    const began = performance.now();
    const telemetry = inMemoryMetrics();
    const store = stores.open(await stores.schema(), {
      meterProvider: telemetry.meterProvider,
      listen: false,
      reaper: { intervalMs: HOUR_MS, tombstoneRetentionMs: 0 },
    });
    await firstPass(store);
    for (let i = 0; i < 3; i++) await store.createTask({ toolName: 'build', ttlMs: 0 });
    expect(await store.reapExpired()).toEqual<ReapResult>({ tombstoned: 3, purged: 3 });

    const read = await telemetry.read();
    expect(read.get('mcp_task_store.reaper.rows')?.unit).toBe('{row}');
    expect(sums(read.get('mcp_task_store.reaper.rows')?.points, 'mcp_task_store.phase')).toEqual({ tombstoned: 3, purged: 3, historyPurged: 0 });
    const passes = read.get('mcp_task_store.reaper.pass.duration')?.points;
    const succeeded = histogram(passes, { 'mcp_task_store.outcome': 'success' });
    expect(succeeded?.count).toBe(2); // the start-up pass and ours
    expect(succeeded?.sum).toBeGreaterThan(0);
    expect(succeeded?.sum).toBeLessThan((performance.now() - began) / 1000);
    expect(read.get('mcp_task_store.reaper.failures')).toBeUndefined();

    const broken = inMemoryMetrics();
    const unmigrated = stores.open('not_migrated', { meterProvider: broken.meterProvider, listen: false });
    await expect(unmigrated.reapExpired()).rejects.toMatchObject({ kind: 'backend' });
    const failed = await broken.read();
    expect(sums(failed.get('mcp_task_store.reaper.failures')?.points, 'error.type')).toEqual({ '42P01': 1 }); // undefined_table
    const failedPasses = failed.get('mcp_task_store.reaper.pass.duration')?.points;
    const failure = histogram(failedPasses, { 'mcp_task_store.outcome': 'failure' });
    expect(failure?.count).toBe(1);
    expect(failure?.sum).toBeGreaterThan(0);
    expect(failure?.sum).toBeLessThan((performance.now() - began) / 1000);
  });
});

// -- Logs, and what neither may carry -----------------------------------------------------------

describe('logs', () => {
  test('the logger gets listener and reaper lines; neither lines nor metrics carry content or passwords', async () => {
    const logger = recordingLogger();
    const telemetry = inMemoryMetrics();
    const schema = await stores.schema();
    const store = stores.open(schema, {
      logger,
      meterProvider: telemetry.meterProvider,
      reaper: { intervalMs: HOUR_MS, tombstoneRetentionMs: 0 },
    });
    await firstPass(store);
    await listening(store);
    const { taskId } = await store.createTask({ toolName: 'build', arguments: { q: 'ARGUMENT-SENTINEL' } });
    const waiting = store.waitForCompletion(taskId);
    await awaitedInDatabase(stores.pool(), schema, taskId);
    await store.setStatus(taskId, 'working', 'MESSAGE-SENTINEL');
    await store.completeTask(taskId, text('RESULT-SENTINEL'));
    await waiting;
    await store.setTtl(taskId, 0);
    await store.reapExpired();

    // A listener that cannot connect, with a password in its URL.
    const unreachable = stores.open(schema, {
      logger,
      meterProvider: telemetry.meterProvider,
      listen: { connectionString: 'postgres://someone:s3cret-pw@127.0.0.1:1/db' },
    });
    await within('a reconnection', new Promise((resolve) => unreachable.onListenerStateChange(resolve)));
    // A driver error whose message has the URL and whose detail has the row, as a check violation's does.
    const failing = new PostgresTaskStore({ pool: failingPool(), logger, listen: false, reaper: false });
    const refused = failing.createTask({ toolName: 'build', arguments: { q: 'ARGUMENT-SENTINEL' } });
    await expect(refused).rejects.toThrow(TaskStoreError);
    await failing.close();

    const lines = (level: keyof Logger, msg: string) =>
      logger.lines.filter((line) => line.level === level && line.msg === msg);
    expect(lines('info', 'listener listening')).toHaveLength(1);
    expect(lines('info', 'reaper pass').map((line) => line.obj)).toEqual([
      { schema, tombstoned: 1, purged: 1, historyPurged: 0, durationMs: expect.any(Number) },
    ]);
    expect(lines('debug', 'reaper pass')).toHaveLength(1); // the start-up pass found nothing
    expect(lines('warn', 'listener connection lost; reconnecting')[0]?.obj).toMatchObject({
      schema,
      state: 'reconnecting',
      retryInMs: expect.any(Number),
      code: 'ECONNREFUSED',
    });
    expect(lines('error', 'database error').map((line) => line.obj)).toEqual([
      {
        schema: 'mcp_tasks',
        error: 'database error: could not connect to postgres://***@db.example/tasks (08006)',
        code: '08006',
      },
    ]);
    const attributes = [...(await telemetry.read()).values()].map(({ points }) => points.map((point) => point.attributes));
    const reported = JSON.stringify([logger.lines, attributes]);
    for (const secret of [...SECRETS, taskId]) expect(reported).not.toContain(secret);
  });

  test('a database error is one line, even when a nested read meets it; a refusal or a closed store is none', async () => {
    const logger = recordingLogger();
    const schema = await stores.schema();
    const role = await storeRole(schema);
    const store = new PostgresTaskStore({ connectionString: role.connectionString, schema, logger, listen: false, reaper: false, limits: { maxPayloadBytes: 1024 } });
    try {
      await expect(store.createTask({ toolName: '' })).rejects.toMatchObject({ kind: 'invalid_input' });
      const { taskId } = await store.createTask({ toolName: 'build' });
      // Oversized meta is refused only for a task that exists: finding out is a read, which fails.
      await role.reads(false);
      await expect(store.setTaskMeta(taskId, { pad: 'x'.repeat(2048) })).rejects.toMatchObject({ kind: 'backend' });
      await role.reads(true);
      await store.close();
      await expect(store.getTask(taskId)).rejects.toMatchObject({ kind: 'backend' });
    } finally {
      await store.close();
    }
    expect(logger.lines.filter((line) => line.level === 'error').map((line) => [line.msg, line.obj])).toEqual([
      ['database error', { schema, error: expect.stringContaining('permission denied'), code: '42501' }],
    ]);
  });

  test('a call that gave up waiting for its turn behind another is not logged as a database error', async () => {
    const logger = recordingLogger();
    const schema = await stores.schema();
    // One connection, held here: the first call gets the task's turn and then waits for it.
    const pool = new pg.Pool({ connectionString: stores.connectionString, max: 1 });
    const store = new PostgresTaskStore({ pool, schema, logger, listen: false, reaper: false, lockTimeoutMs: 200 });
    try {
      const { taskId } = await store.createTask({ toolName: 'build' });
      const held = await pool.connect();
      const first = store.setStatus(taskId, 'working', 'first');
      const queued = store.setStatus(taskId, 'working', 'queued');
      await expect(queued).rejects.toMatchObject({ kind: 'backend', message: expect.stringContaining('an earlier call on it') });
      held.release();
      expect(await first).toBe(true);
    } finally {
      await store.close();
      await pool.end();
    }
    expect(logger.lines.filter((line) => line.level === 'error')).toEqual([]);
  });

  test('a wait ended by close() is not logged as a database error', async () => {
    const logger = recordingLogger();
    const schema = await stores.schema();
    const store = stores.open(schema, { logger, listen: false });
    const { taskId } = await store.createTask({ toolName: 'build' });
    const waiting = store.waitForCompletion(taskId);
    await awaitedInDatabase(stores.pool(), schema, taskId);
    await store.close();
    await expect(waiting).rejects.toMatchObject({ kind: 'backend' });
    expect(logger.lines.filter((line) => line.level === 'error')).toEqual([]);
  });

  test('a logger that throws breaks nothing', async () => {
    const throwing = () => {
      throw new Error('logger down');
    };
    const logger = { debug: throwing, info: throwing, warn: throwing, error: throwing };
    const store = stores.open(await stores.schema(), { logger, reaper: { intervalMs: HOUR_MS } });
    await firstPass(store);
    await listening(store);
    expect(await store.reapExpired()).toEqual({ tombstoned: 0, purged: 0 });
  });
});

/** A pool whose connections fail the way a driver reports a violated check: values in `detail`. */
function failingPool(): pg.Pool {
  const error = Object.assign(new Error('could not connect to postgres://someone:s3cret-pw@db.example/tasks'), {
    code: '08006',
    detail: 'Failing row contains ({"q": "ARGUMENT-SENTINEL"}).',
  });
  const noop = () => {};
  const fail = async () => Promise.reject(error);
  return { connect: fail, query: fail, end: async () => {}, on: noop, off: noop } as unknown as pg.Pool;
}

// -- Without an SDK, and options ----------------------------------------------------------------

describe('without an SDK or a logger', () => {
  test('the global no-op meter takes every measurement and nothing throws', async () => {
    expect(metrics.getMeterProvider().getMeter('probe').createCounter('probe').constructor.name).toMatch(/Noop/);
    const schema = await stores.schema();
    const store = stores.open(schema, { reaper: { intervalMs: HOUR_MS, tombstoneRetentionMs: 0 } });
    await firstPass(store);
    await listening(store);
    const { taskId } = await store.createTask({ toolName: 'build', ttlMs: 60_000 });
    const waiting = store.waitForCompletion(taskId);
    await awaitedInDatabase(stores.pool(), schema, taskId);
    await store.setStatus(taskId, 'input_required');
    await store.completeTask(taskId, text('done'));
    expect((await waiting)?.task.status).toBe('completed');
    await store.setTtl(taskId, 0);
    expect(await store.reapExpired()).toEqual({ tombstoned: 1, purged: 1 });
  });
});

describe('options', () => {
  test.each([
    ['meterProvider', {}],
    ['meterProvider', null],
    ['logger', { info() {} }],
    ['logger', 'debug'],
  ])('%s %j is invalid_input', (option, value) => {
    const attempt = () => new PostgresTaskStore({ connectionString: 'postgres://localhost/db', [option]: value });
    expect(attempt).toThrow(TaskStoreError);
    expect(attempt).toThrow(
      expect.objectContaining({ kind: 'invalid_input', message: expect.stringContaining(`options.${option}`) }),
    );
  });

  test('console is a logger', async () => {
    const options = { connectionString: 'postgres://localhost/db', listen: false, reaper: false } as const;
    const store = new PostgresTaskStore({ ...options, logger: console });
    await store.close();
  });
});
