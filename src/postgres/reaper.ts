/**
 * The reaper: expired tasks become tombstones (owner and expiry kept, content gone), and
 * tombstones are purged once their retention window after expiry has passed.
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
import type { StoreDatabase, TaskDatabase } from './tables.js';

export interface ReaperOptions {
  /** Time between automatic passes. Default 30000. */
  intervalMs?: number;
  /** How long a tombstone is kept after the task expired, so taskPresence says `expired`. Default 300000. */
  tombstoneRetentionMs?: number;
  /** Rows per batch. Default 1000. */
  batchSize?: number;
}

export const reaperOptionsSchema = z.strictObject({
  intervalMs: z.number().int().min(1).max(2 ** 31 - 1).optional(),
  // Bounded like a ttl: PostgreSQL must be able to subtract it from now().
  tombstoneRetentionMs: ttlSchema.optional(),
  batchSize: z.number().int().min(1).max(1_000_000).optional(),
});

const REAPER_DEFAULTS = { intervalMs: 30_000, tombstoneRetentionMs: 300_000, batchSize: 1000 } as const;
const MIN_BATCH_SIZE = 50;
const STATEMENT_TIMEOUT_MS = 5000;
const LOCK_TIMEOUT_MS = 1000;
/** query_canceled (statement_timeout) and lock_not_available (lock_timeout). */
const TIMEOUT_CODES = new Set(['57014', '55P03']);

/**
 * What one committed batch did: rows tombstoned, tombstones purged, or the history rows purged
 * with them. Lets a caller show progress while a backlog drains (the CLI's `reap`).
 */
export interface ReaperBatch {
  phase: 'tombstone' | 'purge' | 'history';
  rows: number;
}

/** A batch's rows in its own phase (which decide whether the phase goes on), and purged history. */
interface BatchCounts {
  rows: number;
  history?: number;
}

export class Reaper {
  private readonly intervalMs: number | null;
  private readonly retentionMs: number;
  private readonly maxBatchSize: number;
  private batchSize: number;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<unknown> | null = null;
  private stopped = false;
  private readonly passListeners = new Set<(outcome: ReapResult | Error) => void>();
  private readonly batchListeners = new Set<(batch: ReaperBatch) => void>();

  /** `options` false: no automatic passes, only {@link runOnce} by hand. */
  constructor(
    private readonly database: StoreDatabase,
    options: false | ReaperOptions,
  ) {
    const settings = options === false ? {} : options;
    this.intervalMs = options === false ? null : settings.intervalMs ?? REAPER_DEFAULTS.intervalMs;
    this.retentionMs = settings.tombstoneRetentionMs ?? REAPER_DEFAULTS.tombstoneRetentionMs;
    this.maxBatchSize = settings.batchSize ?? REAPER_DEFAULTS.batchSize;
    this.batchSize = this.maxBatchSize;
  }

  /** Called after every automatic or manual pass with its counts, or with the error that ended it. */
  onPass(callback: (outcome: ReapResult | Error) => void): () => void {
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
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.running?.catch(() => {});
  }

  runOnce(): Promise<ReapResult> {
    const pass = this.pass();
    this.running = pass;
    pass.then(
      (counts) => this.report(counts),
      (error: Error) => this.report(error),
    );
    return pass;
  }

  private async pass(): Promise<ReapResult> {
    const tombstoned = await this.drain('tombstone', (trx, limit) => this.tombstoneBatch(trx, limit));
    const purged = await this.drain('purge', (trx, limit) => this.purgeBatch(trx, limit));
    return { tombstoned, purged };
  }

  /**
   * Runs batches until one comes back short, another reaper is doing this phase on the schema, or
   * we stop. Each phase has its own lock, so a pass busy purging never keeps another from
   * tombstoning.
   */
  private async drain(
    phase: 'tombstone' | 'purge',
    batch: (trx: Transaction<TaskDatabase>, limit: number) => Promise<BatchCounts>,
  ): Promise<number> {
    let total = 0;
    while (!this.stopped) {
      const limit = this.batchSize;
      let counts: BatchCounts | null;
      try {
        counts = await this.database.db.transaction().execute(async (trx) => {
          await sql`SELECT set_config('statement_timeout', ${String(STATEMENT_TIMEOUT_MS)}, true),
                           set_config('lock_timeout', ${String(LOCK_TIMEOUT_MS)}, true)`.execute(trx);
          const { rows } = await sql<{ locked: boolean }>`
            SELECT pg_try_advisory_xact_lock(hashtextextended(${`mcp-task-store ${phase} ${this.database.schema}`}, 0)) AS locked`.execute(trx);
          return rows[0]!.locked ? batch(trx, limit) : null;
        });
      } catch (error) {
        if (!TIMEOUT_CODES.has((error as { code?: string }).code ?? '')) throw error;
        this.batchSize = Math.max(MIN_BATCH_SIZE, Math.floor(this.batchSize / 2));
        continue;
      }
      if (counts === null) break;
      const done = counts.rows;
      total += done;
      this.reportBatch({ phase, rows: done });
      if (counts.history !== undefined) this.reportBatch({ phase: 'history', rows: counts.history });
      this.batchSize = Math.min(this.maxBatchSize, this.batchSize * 2);
      if (done < limit) break;
    }
    return total;
  }

  /**
   * Deleting the live row fires the NOTIFY that tells the token's holder to raise it. The batch's
   * rows are deleted by their physical address (ctid), which they keep while this transaction
   * holds their locks: a TID scan, where a join back to the task ids gets planned as a hash join
   * over a sequential scan of the whole table.
   */
  private async tombstoneBatch(trx: Transaction<TaskDatabase>, limit: number): Promise<BatchCounts> {
    const { tasks, tombstones } = this.database.tables;
    const { rows } = await sql<{ count: number }>`
      WITH moved AS (
        DELETE FROM ${tasks}
         WHERE ctid = ANY(ARRAY(
           SELECT ctid FROM ${tasks}
            WHERE expires_at <= now()
            ORDER BY expires_at
            LIMIT ${limit}
              FOR UPDATE SKIP LOCKED))
        RETURNING task_id, owner, expires_at
      ), buried AS (
        INSERT INTO ${tombstones} (task_id, owner, expired_at)
        SELECT task_id, owner, expires_at FROM moved
        RETURNING 1
      )
      SELECT count(*)::int AS count FROM buried`.execute(trx);
    return { rows: rows[0]!.count };
  }

  private async purgeBatch(trx: Transaction<TaskDatabase>, limit: number): Promise<BatchCounts> {
    const { tombstones, task_history } = this.database.tables;
    const { rows } = await sql<{ count: number; history: number }>`
      WITH old AS (
        SELECT task_id FROM ${tombstones}
         WHERE expired_at <= now() - ${this.retentionMs}::float8 * interval '1 millisecond'
         ORDER BY expired_at
         LIMIT ${limit}
           FOR UPDATE SKIP LOCKED
      ), purged AS (
        DELETE FROM ${tombstones} AS t USING old WHERE t.task_id = old.task_id RETURNING t.task_id
      ), history AS (
        DELETE FROM ${task_history} WHERE task_id IN (SELECT task_id FROM purged) RETURNING 1
      )
      SELECT (SELECT count(*)::int FROM purged) AS count, (SELECT count(*)::int FROM history) AS history`.execute(trx);
    return { rows: rows[0]!.count, history: rows[0]!.history };
  }

  private report(outcome: ReapResult | Error): void {
    for (const callback of this.passListeners) callback(outcome);
  }

  private reportBatch(batch: ReaperBatch): void {
    for (const callback of this.batchListeners) callback(batch);
  }
}
