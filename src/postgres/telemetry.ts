/**
 * What the store says about itself: OpenTelemetry metrics through `@opentelemetry/api` (a no-op
 * until the application installs an SDK) and lines for a pino-compatible logger (silent unless one
 * is given). Neither ever carries task content, ids or credentials: metric attributes are statuses,
 * outcomes, phases and error codes, and an error is logged as its code and a message scrubbed the
 * way `backend` errors are.
 */
import { readFileSync } from 'node:fs';
import { metrics, type Counter, type Histogram, type MeterProvider } from '@opentelemetry/api';
import type { TaskStoreError } from '../contract/errors.js';
import type { RescueResult } from '../contract/leases.js';
import type { ReapResult, TaskSnapshot, TaskStatus } from '../contract/types.js';
import { toBackendError } from './backend-error.js';
import type { ListenerStateChange } from './listener.js';

/** The methods the store calls, as pino, bunyan and console-like adapters have them. */
export interface Logger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export const LOGGER_METHODS = ['debug', 'info', 'warn', 'error'] as const;

const silent = () => {};
const SILENT_LOGGER: Logger = { debug: silent, info: silent, warn: silent, error: silent };

export const METER_NAME = 'mcp-task-store-postgres';

/** How a waitForCompletion call ended: the task's terminal status, or why there is none. */
export type WaitOutcome = TaskStatus | 'gone' | 'aborted' | 'error';

// Seconds. The default boundaries (0 to 10000) suit milliseconds, not these.
const WAKE_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const WAIT_BUCKETS = [0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600];
const PASS_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

let packageVersion: string | undefined;
/** Read once: the same path resolves to the package root from src/ and from dist/. */
function version(): string {
  const manifest = new URL('../../package.json', import.meta.url);
  packageVersion ??= (JSON.parse(readFileSync(manifest, 'utf8')) as { version: string }).version;
  return packageVersion;
}

export interface TelemetryOptions {
  meterProvider: MeterProvider | undefined;
  logger: Logger | undefined;
  schema: string;
  /** Replaced in logged messages, like in `backend` errors. */
  connectionString: string | undefined;
}

export class StoreTelemetry {
  private readonly logger: Logger;
  private readonly schema: string;
  private readonly connectionString: string | undefined;
  private readonly transitions: Counter;
  private readonly waitDuration: Histogram;
  private readonly wakeDelay: Histogram;
  private readonly reaperRows: Counter;
  private readonly reaperPassDuration: Histogram;
  private readonly reaperFailures: Counter;
  private readonly listenerReconnects: Counter;
  private readonly rescues: Counter;

  constructor(options: TelemetryOptions) {
    this.logger = options.logger ?? SILENT_LOGGER;
    this.schema = options.schema;
    this.connectionString = options.connectionString;
    const meter = options.meterProvider
      ? options.meterProvider.getMeter(METER_NAME, version())
      : metrics.getMeter(METER_NAME, version());
    this.transitions = meter.createCounter('mcp_task_store.transitions', {
      unit: '{transition}',
      description: 'Status changes committed by this instance, by the status reached',
    });
    this.waitDuration = meter.createHistogram('mcp_task_store.wait.duration', {
      unit: 's',
      description: 'How long waitForCompletion calls waited, by outcome',
      advice: { explicitBucketBoundaries: WAIT_BUCKETS },
    });
    this.wakeDelay = meter.createHistogram('mcp_task_store.wake.delay', {
      unit: 's',
      description: 'From a task settling (its lastUpdatedAt) to a waiter on this instance being woken',
      advice: { explicitBucketBoundaries: WAKE_BUCKETS },
    });
    this.reaperRows = meter.createCounter('mcp_task_store.reaper.rows', {
      unit: '{row}',
      description: 'Rows reaper passes on this instance processed, by phase',
    });
    this.reaperPassDuration = meter.createHistogram('mcp_task_store.reaper.pass.duration', {
      unit: 's',
      description: 'How long reaper passes took, by outcome',
      advice: { explicitBucketBoundaries: PASS_BUCKETS },
    });
    this.reaperFailures = meter.createCounter('mcp_task_store.reaper.failures', {
      unit: '{pass}',
      description: 'Reaper passes that ended in an error, by error.type (SQLSTATE or error name)',
    });
    this.listenerReconnects = meter.createCounter('mcp_task_store.listener.reconnects', {
      unit: '{reconnect}',
      description: 'Times the LISTEN connection was lost and a reconnection scheduled',
    });
    this.rescues = meter.createCounter('mcp_task_store.rescues', {
      unit: '{task}',
      description: 'Tasks whose runner was lost that a rescuer on this instance failed or resumed, by outcome',
    });
  }

  /** A status change this instance committed (not a progress message that kept the status). */
  transitioned(status: TaskStatus): void {
    this.transitions.add(1, { 'mcp_task_store.status': status });
  }

  /**
   * Times one wait. The wake delay is taken only for a task that settled after the wait began; it
   * compares the database's clock with ours, so a skew between them shows in it (never below 0).
   */
  timeWait(waiting: Promise<TaskSnapshot | null>, signal: AbortSignal | undefined): Promise<TaskSnapshot | null> {
    // Callbacks, not an async function: a store may hold tens of thousands of waits, and each
    // suspended async frame would stay in memory as long as its wait.
    const started = performance.now();
    const startedAt = Date.now();
    return waiting.then(
      (snapshot) => {
        this.waitEnded(started, snapshot?.task.status ?? 'gone');
        const settledAt = snapshot ? Date.parse(snapshot.task.lastUpdatedAt) : Number.NaN;
        if (settledAt >= startedAt) this.wakeDelay.record(Math.max(0, Date.now() - settledAt) / 1000);
        return snapshot;
      },
      (error: unknown) => {
        this.waitEnded(started, signal?.aborted && error === signal.reason ? 'aborted' : 'error');
        throw error;
      },
    );
  }

  private waitEnded(started: number, outcome: WaitOutcome): void {
    this.waitDuration.record((performance.now() - started) / 1000, { 'mcp_task_store.outcome': outcome });
  }

  reaperPassed(outcome: ReapResult | Error, durationMs: number): void {
    const seconds = durationMs / 1000;
    const fields = { schema: this.schema, durationMs: Math.round(durationMs) };
    if (outcome instanceof Error) {
      const errorType = errorCode(outcome) ?? outcome.name;
      this.reaperPassDuration.record(seconds, { 'mcp_task_store.outcome': 'failure' });
      this.reaperFailures.add(1, { 'error.type': errorType });
      this.log('warn', { ...fields, ...this.describe(outcome) }, 'reaper pass failed; the next pass retries');
      return;
    }
    this.reaperPassDuration.record(seconds, { 'mcp_task_store.outcome': 'success' });
    // Every count the pass returns is a phase, so a new phase is counted without a change here.
    for (const [phase, rows] of Object.entries(outcome)) this.reaperRows.add(rows, { 'mcp_task_store.phase': phase });
    const reaped = Object.values(outcome).some((rows) => rows > 0);
    this.log(reaped ? 'info' : 'debug', { ...fields, ...outcome }, 'reaper pass');
  }

  listenerChanged({ state, error, retryInMs }: ListenerStateChange): void {
    if (state !== 'reconnecting') {
      this.log(state === 'listening' ? 'info' : 'debug', { schema: this.schema, state }, `listener ${state}`);
      return;
    }
    this.listenerReconnects.add(1);
    const cause = error ? this.describe(error) : {};
    this.log('warn', { schema: this.schema, state, retryInMs, ...cause }, 'listener connection lost; reconnecting');
  }

  /** A rescuer pass: its tasks counted by outcome, and a line when it rescued any. */
  rescued({ failed, resumed }: RescueResult): void {
    if (failed > 0) this.rescues.add(failed, { 'mcp_task_store.outcome': 'failed' });
    if (resumed > 0) this.rescues.add(resumed, { 'mcp_task_store.outcome': 'resumed' });
    if (failed + resumed > 0) this.log('warn', { schema: this.schema, failed, resumed }, 'rescued tasks whose runner was lost');
  }

  /** A heartbeat, rescue or resume that failed; the next interval retries. */
  leaseTrouble(what: 'heartbeat' | 'rescue' | 'resume', error: unknown): void {
    const cause = error instanceof Error ? this.describe(error) : { error: String(error) };
    this.log('warn', { schema: this.schema, ...cause }, `lease ${what} failed; the next interval retries`);
  }

  /** A call failed on the database (the caller gets the same error). */
  backendFailed(failure: TaskStoreError): void {
    this.log('error', { schema: this.schema, ...this.describe(failure) }, 'database error');
  }

  /** The code and a scrubbed message only: a driver error's other fields can hold row values. */
  private describe(error: Error): { error: string; code?: string } {
    const scrubbed = toBackendError(error, this.connectionString);
    const code = errorCode(scrubbed.cause) ?? errorCode(error);
    return code === undefined ? { error: scrubbed.message } : { error: scrubbed.message, code };
  }

  /** A logger that throws must not break the listener or reaper it reports on. */
  private log(level: keyof Logger, obj: object, msg: string): void {
    try {
      this.logger[level](obj, msg);
    } catch {
      // nothing sensible to do: the logger is what would report it
    }
  }
}

function errorCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null | undefined)?.code;
  return typeof code === 'string' ? code : undefined;
}
