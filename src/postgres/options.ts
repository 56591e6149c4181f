/**
 * PostgresTaskStore's options: what each means and its default, and their validation. The groups
 * both stores take (`defaultTtlMs`, `limits`) are the contract's schemas; the rest are this
 * store's. Like every other argument, a bad option throws `invalid_input` at construction.
 */
import type { MeterProvider } from '@opentelemetry/api';
import type pg from 'pg';
import { z } from 'zod';
import { leaseSettings, type LeaseOptions, type LeaseSettings } from '../contract/leases.js';
import { commonStoreOptions, parseOptions } from '../contract/options.js';
import { DEFAULT_MAX_PAYLOAD_BYTES } from '../contract/retention.js';
import type { RetentionLimits } from '../contract/types.js';
import { DEFAULT_TTL_MS, readFields } from '../contract/validation.js';
import { reaperOptionsSchema, type ReaperOptions } from './reaper.js';
import { connectionFields, listenSchema, requiringConnection } from './connection-options.js';
import { DEFAULT_SCHEMA } from './schema-name.js';
import { LOGGER_METHODS, type Logger } from './telemetry.js';

export interface PostgresTaskStoreOptions {
  /** A pool the caller owns; `close()` leaves it open. */
  pool?: pg.Pool;
  /** Or: the store creates and owns its pool (10 connections). */
  connectionString?: string;
  /** Default 'mcp_tasks'. Must already be migrated (see `migrate`). */
  schema?: string;
  /** Default 300000. */
  defaultTtlMs?: number;
  /**
   * `maxPayloadBytes` (default 4 MiB) and `maxTasksPerOwner` (default none). `maxTasks` and
   * `maxRetainedBytes` bound a process's memory and are refused here.
   */
  limits?: RetentionLimits;
  /**
   * LISTEN/NOTIFY. `false` = poll-only (e.g. behind PgBouncer in transaction mode);
   * `connectionString` = a direct connection for the listener alone. Default: listen on a
   * connection made with the pool's settings.
   */
  listen?: false | { connectionString?: string };
  /**
   * How often the tasks this instance watches (waiters, tokens, `watchTasks`) are re-read while
   * notifications cannot be relied on: in poll-only mode, while the listener reconnects, and while
   * re-reads fail. A waiter in poll-only mode wakes within this of its task settling. Default 1000.
   */
  backstopPollMs?: number;
  /**
   * The automatic reaper. `false` = never reap automatically (`reapExpired()` still works).
   * Defaults: every 30 s, tombstones kept 5 min, history kept 7 days from each task's creation
   * (and until the task is gone), batches of 1000 rows.
   */
  reaper?: false | ReaperOptions;
  /**
   * Execution leases (see the README's "When a runner dies"): heartbeat every 10 s, lease 30 s,
   * rescued tasks failed unless their tool resumes. The rescuer runs on the reaper's instance and
   * only where the reaper runs automatically.
   */
  leases?: LeaseOptions;
  /**
   * Run statements as named prepared statements, parsed and planned once per connection.
   * Default true; set false behind PgBouncer older than 1.21 in transaction mode.
   */
  preparedStatements?: boolean;
  /**
   * How long a call on a task waits for that task's row when another session holds its lock
   * (an idle-in-transaction client, say) before it fails with a `backend` error saying the task is
   * locked. Only calls on that task wait, and at most one pool connection per task. Default 5000.
   */
  lockTimeoutMs?: number;
  /**
   * Where the store's metrics go (see the README's "Metrics and logs"). Default: the global
   * provider, `metrics.getMeter('mcp-task-store-postgres', version)`, a no-op unless an
   * OpenTelemetry SDK was registered before the store was created.
   */
  meterProvider?: MeterProvider;
  /**
   * A pino-compatible logger for listener state changes, reaper passes and database errors. Lines
   * carry counts, states and scrubbed error messages, never task content. Default: silent.
   */
  logger?: Logger;
}

/** Structural, like the pool: the caller's OpenTelemetry API may be another copy than ours. */
const meterProviderSchema = z.custom<MeterProvider>(
  (value) => typeof value === 'object' && value !== null && typeof (value as MeterProvider).getMeter === 'function',
  'must be a MeterProvider (with getMeter)',
);

const loggerSchema = z.custom<Logger>(
  (value) =>
    typeof value === 'object' &&
    value !== null &&
    LOGGER_METHODS.every((method) => typeof (value as Record<string, unknown>)[method] === 'function'),
  `must be a logger with ${LOGGER_METHODS.join(', ')} methods`,
);

const optionsSchema = requiringConnection(
  z.strictObject({
    ...connectionFields,
    ...commonStoreOptions,
    listen: listenSchema.optional(),
    // setInterval's bound.
    backstopPollMs: z.number().int().min(1).max(2 ** 31 - 1).optional(),
    reaper: z.union([z.literal(false), readFields(reaperOptionsSchema)]).optional(),
    preparedStatements: z.boolean().optional(),
    // PostgreSQL's lock_timeout is an int of milliseconds.
    lockTimeoutMs: z.number().int().min(1).max(2 ** 31 - 1).optional(),
    meterProvider: meterProviderSchema.optional(),
    logger: loggerSchema.optional(),
  }),
).refine((options) => options.limits?.maxTasks === undefined && options.limits?.maxRetainedBytes === undefined, {
  message:
    'maxTasks and maxRetainedBytes bound a process’s memory and do not apply to PostgresTaskStore; use maxPayloadBytes and maxTasksPerOwner',
  path: ['limits'],
});

interface StoreSettings {
  pool: pg.Pool | undefined;
  connectionString: string | undefined;
  schema: string;
  defaultTtlMs: number;
  maxPayloadBytes: number;
  maxTasksPerOwner: number | null;
  listen: false | { connectionString?: string };
  backstopPollMs: number;
  reaper: false | ReaperOptions;
  leases: LeaseSettings;
  preparedStatements: boolean;
  lockTimeoutMs: number;
  meterProvider: MeterProvider | undefined;
  logger: Logger | undefined;
}

const DEFAULT_LOCK_TIMEOUT_MS = 5000;
const DEFAULT_BACKSTOP_POLL_MS = 1000;

/** The options with every default filled in, or `invalid_input`. */
export function storeSettings(options: PostgresTaskStoreOptions): StoreSettings {
  const parsed = parseOptions(optionsSchema, options);
  return {
    pool: parsed.pool,
    connectionString: parsed.connectionString,
    schema: parsed.schema ?? DEFAULT_SCHEMA,
    defaultTtlMs: parsed.defaultTtlMs ?? DEFAULT_TTL_MS,
    maxPayloadBytes: parsed.limits?.maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD_BYTES,
    maxTasksPerOwner: parsed.limits?.maxTasksPerOwner ?? null,
    listen: parsed.listen ?? {},
    backstopPollMs: parsed.backstopPollMs ?? DEFAULT_BACKSTOP_POLL_MS,
    reaper: parsed.reaper ?? {},
    leases: leaseSettings(parsed.leases),
    preparedStatements: parsed.preparedStatements ?? true,
    lockTimeoutMs: parsed.lockTimeoutMs ?? DEFAULT_LOCK_TIMEOUT_MS,
    meterProvider: parsed.meterProvider,
    logger: parsed.logger,
  };
}
