/**
 * The reaper, in three phases: expired tasks become tombstones (owner and expiry kept, content
 * gone); tombstones are purged once their retention window after expiry has passed; and the
 * history of tasks gone for good is deleted, a whole timeline at a time, once the task's creation
 * is older than the history's retention window. Each phase records what it did in reaper_activity.
 *
 * It works in short batches (`FOR UPDATE SKIP LOCKED LIMIT n`) under a statement and lock timeout,
 * halving the batch after a timeout, so a backlog never blocks live transitions. A transaction
 * advisory lock per schema keeps to one reaper at a time across every instance; it is released
 * with the transaction, so a crashed reaper never holds it.
 */
import { sql, type Transaction } from 'kysely';
import { z } from 'zod';
import type { ReapResult } from '../contract/types.js';
import { ttlSchema } from '../contract/validation.js';
import type { ActivityPhase, ReaperPhase, StoreDatabase, TaskDatabase } from './tables.js';
import { deletingDependents } from './task-dependents.js';

export interface ReaperOptions {
  /** Time between automatic passes. Default 30000. */
  intervalMs?: number;
  /** How long a tombstone is kept after the task expired, so taskPresence says `expired`. Default 300000. */
  tombstoneRetentionMs?: number;
  /**
   * How long a task's history is kept, measured from the task's creation; it is deleted once the
   * task is gone too (discarded, or expired and tombstoned). Default 604800000 (7 days).
   */
  historyRetentionMs?: number;
  /** Rows per batch (tasks, for the history phase). Default 1000. */
  batchSize?: number;
  /**
   * A pause after each batch of a backlog, as a multiple of the time the batch took, leaving the
   * server to live traffic meanwhile: 1 gives the reaper at most half of its share of the server,
   * 0 runs the batches back to back. Default 0 (bench/findings.md has the figures).
   */
  pacing?: number;
}

/** What one pass did: the contract's counts, and the tasks whose history it deleted. */
export interface ReaperPass extends ReapResult {
  /** Tasks gone for good whose history, created more than historyRetentionMs ago, was deleted. */
  historyPurged: number;
}

export const reaperOptionsSchema = z.strictObject({
  intervalMs: z.number().int().min(1).max(2 ** 31 - 1).optional(),
  // Bounded like a ttl: PostgreSQL must be able to subtract it from now().
  tombstoneRetentionMs: ttlSchema.optional(),
  historyRetentionMs: ttlSchema.optional(),
  batchSize: z.number().int().min(1).max(1_000_000).optional(),
  pacing: z.number().min(0).max(100).optional(),
});

/** The reaper's `pacing` when none is given; the benchmarks read their targets at it. */
export const DEFAULT_REAPER_PACING = 0;

const REAPER_DEFAULTS = {
  intervalMs: 30_000,
  tombstoneRetentionMs: 300_000,
  historyRetentionMs: 604_800_000,
  batchSize: 1000,
  pacing: DEFAULT_REAPER_PACING,
} as const;
const MIN_BATCH_SIZE = 50;
const STATEMENT_TIMEOUT_MS = 5000;
const LOCK_TIMEOUT_MS = 1000;
/** query_canceled (statement_timeout) and lock_not_available (lock_timeout). */
const TIMEOUT_CODES = new Set(['57014', '55P03']);

/** What a batch did, and whether another may find more. */
interface BatchDone {
  rows: number;
  more: boolean;
}

/** A batch that came back short found the last of its rows. */
const fullBatch = (rows: number, limit: number): BatchDone => ({ rows, more: rows === limit });

/** A pass's counts or the error that ended it, and how long it took. */
type PassListener = (outcome: ReaperPass | Error, durationMs: number) => void;

/** What one committed batch did, so a caller can show progress while a backlog drains (the CLI's `reap`). */
export interface ReaperBatch {
  phase: ReaperPhase;
  rows: number;
}

export class Reaper {
  private readonly intervalMs: number | null;
  private readonly retentionMs: number;
  private readonly historyRetentionMs: number;
  private readonly maxBatchSize: number;
  private readonly pacing: number;
  /** Ends the pause between two batches at once, for stop(). */
  private endPause: (() => void) | null = null;
  private batchSize: number;
  /** How many rows a tombstone batch finds by expiry, as a share of its limit (see tombstoneBatch). */
  private findShare = 1;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<unknown> | null = null;
  private stopped = false;
  private readonly passListeners = new Set<PassListener>();
  private readonly batchListeners = new Set<(batch: ReaperBatch) => void>();

  /** `options` false: no automatic passes, only {@link runOnce} by hand. */
  constructor(
    private readonly database: StoreDatabase,
    options: false | ReaperOptions,
  ) {
    const settings = options === false ? {} : options;
    this.intervalMs = options === false ? null : settings.intervalMs ?? REAPER_DEFAULTS.intervalMs;
    this.retentionMs = settings.tombstoneRetentionMs ?? REAPER_DEFAULTS.tombstoneRetentionMs;
    this.historyRetentionMs = settings.historyRetentionMs ?? REAPER_DEFAULTS.historyRetentionMs;
    this.maxBatchSize = settings.batchSize ?? REAPER_DEFAULTS.batchSize;
    this.pacing = settings.pacing ?? REAPER_DEFAULTS.pacing;
    this.batchSize = this.maxBatchSize;
  }

  /** Called after every automatic or manual pass with its counts, or with the error that ended it. */
  onPass(callback: PassListener): () => void {
    this.passListeners.add(callback);
    return () => this.passListeners.delete(callback);
  }

  /** Called after every committed batch of an automatic or manual pass. */
  onBatch(callback: (batch: ReaperBatch) => void): () => void {
    this.batchListeners.add(callback);
    return () => this.batchListeners.delete(callback);
  }

  /** The first automatic pass runs at once, then one every `intervalMs`. */
  start(): void {
    if (this.intervalMs === null) return;
    const tick = () => {
      this.timer = null;
      void this.runOnce()
        .catch(() => {}) // reported through onPass
        .finally(() => {
          if (!this.stopped) this.timer = setTimeout(tick, this.intervalMs!).unref();
        });
    };
    this.timer = setTimeout(tick, 0).unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.endPause?.();
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.running?.catch(() => {});
  }

  runOnce(): Promise<ReaperPass> {
    const started = performance.now();
    const pass = this.pass();
    this.running = pass;
    pass.then(
      (counts) => this.report(counts, performance.now() - started),
      (error: Error) => this.report(error, performance.now() - started),
    );
    return pass;
  }

  private async pass(): Promise<ReaperPass> {
    const tombstoned = await this.drainOnward('tombstone', (trx, limit, from) => this.tombstoneBatch(trx, limit, from));
    const purged = await this.drain('purge', (trx, limit) => this.purgeBatch(trx, limit));
    const historyPurged = await this.drainOnward('history', (trx, limit, from) => this.historyBatch(trx, limit, from));
    return { tombstoned, purged, historyPurged };
  }

  /** {@link drain}, each batch searching on from where the one before it reached (see the batches). */
  private drainOnward(
    phase: ReaperPhase,
    batch: (trx: Transaction<TaskDatabase>, limit: number, from: string | null) => Promise<BatchDone & { reached: string | null }>,
  ): Promise<number> {
    let from: string | null = null;
    return this.drain(phase, async (trx, limit) => {
      const { reached, ...done } = await batch(trx, limit, from);
      from = reached ?? from;
      return done;
    });
  }

  /**
   * Runs batches until one finds no more, another reaper is doing this phase on the schema, or we
   * stop; with `pacing`, pausing after each. Each phase has its own lock, so a pass busy purging
   * never keeps another from tombstoning. A phase that ran at least one batch records itself in
   * reaper_activity, with the database's time of its first batch as its start.
   */
  private async drain(phase: ReaperPhase, batch: (trx: Transaction<TaskDatabase>, limit: number) => Promise<BatchDone>): Promise<number> {
    let total = 0;
    let startedAt: Date | null = null;
    while (!this.stopped) {
      const limit = this.batchSize;
      const batchStarted = performance.now();
      let done: { result: BatchDone; at: Date } | null;
      try {
        done = await inPhaseLock(this.database, phase, (trx) => batch(trx, limit));
      } catch (error) {
        if (!isTimeout(error)) throw error;
        this.batchSize = Math.max(MIN_BATCH_SIZE, Math.floor(this.batchSize / 2));
        continue;
      }
      if (done === null) break;
      startedAt ??= done.at;
      total += done.result.rows;
      for (const callback of this.batchListeners) callback({ phase, rows: done.result.rows });
      this.batchSize = Math.min(this.maxBatchSize, this.batchSize * 2);
      if (!done.result.more) break;
      await this.pause(this.pacing * (performance.now() - batchStarted));
    }
    if (startedAt !== null) await recordActivity(this.database, phase, startedAt, total);
    return total;
  }

  /**
   * Expired tasks become tombstones, their dependents going in the same statement
   * (task-dependents.ts). No NOTIFY: every holder of a token or waiter has its own timer for the
   * deadline (migration 0005).
   *
   * Rows are found by expiry, but deleted page by page: the first change to a page after a
   * checkpoint writes the whole page to the WAL, and expired rows are scattered over the table (rows
   * lie in creation order, they expire in TTL order). So the batch takes a few expired rows in
   * expiry order, and then the other expired rows on their pages, up to `limit`, by physical address
   * (ctid, a TID scan): on a table where many rows expired, each page is written once for all of
   * them rather than once per row (bench/findings.md). The rows keep their addresses while this
   * transaction holds their locks. How few rows to find comes from the last batch: the rows it
   * found, against the expired rows on their pages.
   *
   * Each batch of a pass starts its search at the latest expiry the batch before it found
   * (`expiredFrom`, exact in microseconds since the epoch): every earlier expiry was in that
   * batch, and the index entries of the rows it deleted stay until a vacuum, so starting from the
   * oldest would step over all of them again, a longer walk each batch. What it leaves behind
   * (rows another transaction held) the next pass finds.
   */
  private async tombstoneBatch(
    trx: Transaction<TaskDatabase>,
    limit: number,
    expiredFrom: string | null,
  ): Promise<BatchDone & { reached: string | null }> {
    const { tasks, tombstones } = this.database.tables;
    const found = Math.min(limit, Math.max(1, Math.ceil(limit * this.findShare)));
    const { rows } = await sql<{ found: number; available: number; moved: number; reached: string | null }>`
      WITH found AS (
        SELECT ctid, (ctid::text::point)[0]::bigint AS page, (ctid::text::point)[1]::int AS slot, expires_at
          FROM ${tasks}
         WHERE expires_at <= now()
           AND expires_at >= coalesce('epoch'::timestamptz + ${expiredFrom}::bigint * interval '1 microsecond', '-infinity')
         ORDER BY expires_at
         LIMIT ${found}
      ), on_their_pages AS (
        SELECT ARRAY(
                 SELECT format('(%s,%s)', pages.page, slot)::tid
                   FROM (SELECT DISTINCT page FROM found) AS pages,
                        generate_series(1, (SELECT max(slot) FROM found)) AS slot) AS tids
      ), moved AS (
        DELETE FROM ${tasks}
         WHERE ctid = ANY(ARRAY(
           SELECT ctid FROM ${tasks}
            WHERE ctid = ANY((SELECT tids FROM on_their_pages)::tid[]) AND expires_at <= now()
            -- The rows found first: the oldest expiry always goes in the batch.
            ORDER BY ctid IN (SELECT ctid FROM found) DESC
            LIMIT ${limit}
              FOR UPDATE SKIP LOCKED))
        RETURNING task_id, owner, expires_at, leased, requested_input
      ), buried AS (
        INSERT INTO ${tombstones} (task_id, owner, expired_at)
        SELECT task_id, owner, expires_at FROM moved
        RETURNING 1
      ),
      ${deletingDependents(this.database, sql`ARRAY(SELECT task_id FROM moved)`, {
        requestedInput: sql`ARRAY(SELECT task_id FROM moved WHERE requested_input)`,
        leased: sql`ARRAY(SELECT task_id FROM moved WHERE leased)`,
      })}
      SELECT (SELECT count(*) FROM found)::int AS found,
             (SELECT (extract(epoch FROM max(expires_at)) * 1000000)::bigint::text FROM found) AS reached,
             (SELECT count(*) FROM ${tasks} WHERE ctid = ANY((SELECT tids FROM on_their_pages)::tid[]) AND expires_at <= now())::int AS available,
             (SELECT count(*) FROM buried)::int AS moved`.execute(trx);
    const { found: seen, available, moved, reached } = rows[0]!;
    if (seen > 0 && available > 0) this.findShare = Math.min(1, seen / available);
    // Done when fewer were found than looked for and their pages had room for every one of them
    // in the batch; rows that other transactions held wait for the next pass.
    return { rows: moved, more: moved > 0 && (seen === found || moved === limit), reached };
  }

  private pause(ms: number): Promise<void> {
    if (ms <= 0 || this.stopped) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(() => this.endPause?.(), ms);
      this.endPause = () => {
        clearTimeout(timer);
        this.endPause = null;
        resolve();
      };
    });
  }

  /** The history stays: the history phase deletes it, on a retention of its own. */
  private async purgeBatch(trx: Transaction<TaskDatabase>, limit: number): Promise<BatchDone> {
    const { tombstones } = this.database.tables;
    const { rows } = await sql<{ count: number }>`
      WITH old AS (
        SELECT task_id FROM ${tombstones}
         WHERE expired_at <= now() - ${this.retentionMs}::float8 * interval '1 millisecond'
         ORDER BY expired_at
         LIMIT ${limit}
           FOR UPDATE SKIP LOCKED
      ), purged AS (
        DELETE FROM ${tombstones} AS t USING old WHERE t.task_id = old.task_id RETURNING 1
      )
      SELECT count(*)::int AS count FROM purged`.execute(trx);
    return fullBatch(rows[0]!.count, limit);
  }

  /**
   * Up to `limit` tasks with no live row whose creation row is old enough, found by that row (one
   * per task) and deleted with every other row of theirs in one statement: the history never
   * holds part of a timeline. A task gone has no row left to write history, so none can follow.
   * Whatever else of the task is left (dependents of a task deleted in plain SQL, or by an older
   * version) goes too. Counts the tasks, by their creation rows.
   *
   * Like the tombstone phase, each batch of a pass searches from the latest creation the batch
   * before it took (`createdFrom`, microseconds since the epoch): every older creation row it passed
   * belongs to a task still live (or one another transaction held), and starting from the oldest
   * would walk over all of them again, batch after batch. The next pass looks at them again. The
   * first batch has no lower bound at all: it is a statement of its own, whose plan (a hash join
   * with the live tasks) suits the walk over every old creation, which is all a pass with nothing
   * to delete does; later ones get a plan for the part of the walk that is left.
   */
  private async historyBatch(
    trx: Transaction<TaskDatabase>,
    limit: number,
    createdFrom: string | null,
  ): Promise<BatchDone & { reached: string | null }> {
    const { tasks, task_history } = this.database.tables;
    const { rows } = await sql<{ count: number; reached: string | null }>`
      WITH deleted AS (
        DELETE FROM ${task_history}
         WHERE task_id = ANY(ARRAY(
           SELECT h.task_id FROM ${task_history} AS h
            WHERE h.from_status IS NULL
              AND h.at <= now() - ${this.historyRetentionMs}::float8 * interval '1 millisecond'
              ${createdFrom === null ? sql`` : sql`AND h.at >= 'epoch'::timestamptz + ${createdFrom}::bigint * interval '1 microsecond'`}
              AND NOT EXISTS (SELECT 1 FROM ${tasks} AS t WHERE t.task_id = h.task_id)
            ORDER BY h.at
            LIMIT ${limit}
              FOR UPDATE OF h SKIP LOCKED))
        RETURNING task_id, from_status, at
      ),
      ${deletingDependents(this.database, sql`ARRAY(SELECT task_id FROM deleted WHERE from_status IS NULL)`)}
      SELECT count(*)::int AS count,
             (extract(epoch FROM max(at)) * 1000000)::bigint::text AS reached
        FROM deleted WHERE from_status IS NULL`.execute(trx);
    const { count, reached } = rows[0]!;
    return { ...fullBatch(count, limit), reached };
  }

  private report(outcome: ReaperPass | Error, durationMs: number): void {
    for (const callback of this.passListeners) callback(outcome, durationMs);
  }
}

/**
 * Runs `work` in a transaction under a phase's advisory lock, with the reaper's statement and lock
 * timeouts; `null` when another instance holds the lock (it is doing this phase on the schema).
 * `at` is the database's time, for reaper_activity.
 */
export async function inPhaseLock<T>(
  database: StoreDatabase,
  phase: ActivityPhase,
  work: (trx: Transaction<TaskDatabase>) => Promise<T>,
): Promise<{ result: T; at: Date } | null> {
  return database.db.transaction().execute(async (trx) => {
    await sql`SELECT set_config('statement_timeout', ${String(STATEMENT_TIMEOUT_MS)}, true),
                     set_config('lock_timeout', ${String(LOCK_TIMEOUT_MS)}, true)`.execute(trx);
    const { rows } = await sql<{ locked: boolean; at: Date }>`
      SELECT pg_try_advisory_xact_lock(hashtextextended(${`mcp-task-store ${phase} ${database.schema}`}, 0)) AS locked,
             now() AS at`.execute(trx);
    return rows[0]!.locked ? { result: await work(trx), at: rows[0]!.at } : null;
  });
}

/** A statement or lock timeout, after which a phase retries with a smaller batch. */
export function isTimeout(error: unknown): boolean {
  return TIMEOUT_CODES.has((error as { code?: string }).code ?? '');
}

/** One upsert at the end of a phase: its last run, and the running total. */
export async function recordActivity(database: StoreDatabase, phase: ActivityPhase, startedAt: Date, rows: number): Promise<void> {
  const { reaper_activity } = database.tables;
  await sql`
    INSERT INTO ${reaper_activity} AS a (phase, last_started_at, last_finished_at, last_rows, total_rows)
    VALUES (${phase}, ${startedAt}, now(), ${rows}, ${rows})
    ON CONFLICT (phase) DO UPDATE
       SET last_started_at = excluded.last_started_at, last_finished_at = excluded.last_finished_at,
           last_rows = excluded.last_rows, total_rows = a.total_rows + excluded.total_rows`.execute(database.db);
}
