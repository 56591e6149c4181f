/**
 * PostgresTaskStore's execution leases (src/contract/leases.ts has the rules): the leases this
 * instance holds and their heartbeat, the resume hooks it registered and the claims that feed
 * them, and the rescuer.
 *
 * The heartbeat renews every lease the instance holds in one statement per interval, and learns
 * from it which ones it lost (a rescue, a cancel elsewhere). A task created with a lease has no
 * lease row until the next beat lists it (migration 0012): until then its lease is the runner's
 * own, and the beat tells the database from which creation time on it may have tasks unlisted.
 * An instance with resume hooks also claims rescued tasks of its tools on each beat. The rescuer
 * runs in the reaper's way: one instance at a time under the `rescue` phase's advisory lock, in
 * batches of locked rows, each recorded in reaper_activity.
 */
import { storeClosed, TaskStoreError } from '../contract/errors.js';
import {
  lostRunnerError,
  newRunnerId,
  rescueOutcome,
  resumedMessage,
  type LeasedTask,
  type LeaseSettings,
  type LeaseState,
  type RescueResult,
  type ResumeHook,
  type TaskLeases,
} from '../contract/leases.js';
import { statusMessages } from '../contract/messages.js';
import type { CreateTaskInput, TaskStore } from '../contract/types.js';
import { ResumeHooks } from '../contract/resume-hooks.js';
import { validate } from '../contract/validation.js';
import { leaseStatements, type ClaimedRow, type LeaseStatements, type RescuedRow } from './lease-statements.js';
import { inPhaseLock, isTimeout, recordActivity } from './reaper.js';
import type { StoreCalls } from './store-calls.js';
import type { StoreDatabase } from './tables.js';
import type { StoreTelemetry } from './telemetry.js';

/** What the leases need of their store. */
export interface LeaseHost {
  store: TaskStore;
  database: StoreDatabase;
  calls: StoreCalls;
  telemetry: StoreTelemetry;
  /** createTask, naming `runner.runnerId` as its runner; its write runs inside `runner.inserting`. */
  createLeased(input: CreateTaskInput, runner: LeasedInserts): Promise<LeasedTask>;
  /** Told of the tasks a rescue on this instance failed, once committed. */
  rescueFailed(taskIds: string[]): void;
}

/** How the store writes a task leased to this runner. */
export interface LeasedInserts {
  readonly runnerId: string;
  /** Runs the write of task `taskId`, created with this runner's lease, so the heartbeat lists it. */
  inserting<R>(taskId: string, insert: () => Promise<R>): Promise<R>;
}

export class PostgresLeases implements TaskLeases, LeasedInserts {
  readonly runnerId = newRunnerId();
  private readonly statements: LeaseStatements;
  /** The tasks this instance runs: what each heartbeat renews. */
  private readonly held = new Set<string>();
  /** Of those, the ones created since the last beat, with no lease row yet. */
  private readonly unlisted = new Set<string>();
  /**
   * Creates in flight, each with the database clock of the last beat heard back from before it
   * was sent: its task's creation time is no earlier.
   */
  private readonly creating = new Set<{ notBeforeMs: number }>();
  /** The database clock of the last beat heard back from; null before the first. */
  private clockMs: number | null = null;
  /** Whether this instance creates leased tasks, and so keeps its runner alive by beating. */
  private creates = false;
  /** When (performance.now()) the last beat that came back was sent. */
  private lastBeatSentAt = -Infinity;
  private readonly hooks = new ResumeHooks();
  private readonly resuming = new Set<Promise<void>>();
  private heartbeat: NodeJS.Timeout | null = null;
  private rescuer: NodeJS.Timeout | null = null;
  private beating: Promise<void> | null = null;
  private rescuing: Promise<RescueResult> | null = null;
  private stopped = false;

  constructor(
    private readonly host: LeaseHost,
    readonly settings: LeaseSettings,
    /** Whether this instance runs the rescuer on its own (it follows the reaper's `false`). */
    automaticRescue: boolean,
  ) {
    this.statements = leaseStatements(host.database);
    const beatInBackground = () => void this.beat().catch((error: unknown) => this.host.telemetry.leaseTrouble('heartbeat', error));
    this.heartbeat = setInterval(beatInBackground, settings.heartbeatMs).unref();
    if (automaticRescue) this.rescuer = setInterval(() => void this.rescueInBackground(), settings.rescueIntervalMs).unref();
  }

  createLeasedTask(input: CreateTaskInput): Promise<LeasedTask> {
    return this.host.createLeased(input, this);
  }

  async inserting<R>(taskId: string, insert: () => Promise<R>): Promise<R> {
    this.creates = true;
    // A runner whose deadline passes would lose a new task to the rescuer before it beats again.
    // The beat joined may leave it stale (one begun before this instance created anything only
    // claims; one sent long ago dates the deadline from then), so a second one may follow.
    for (let beats = 0; beats < 2 && this.beatIsStale(); beats++) await this.beat();
    if (this.clockMs === null) throw storeClosed();
    const creating = { notBeforeMs: this.clockMs };
    this.creating.add(creating);
    try {
      const inserted = await insert();
      this.held.add(taskId);
      this.unlisted.add(taskId);
      return inserted;
    } finally {
      this.creating.delete(creating);
    }
  }

  async acquireLease(taskId: string): Promise<boolean> {
    return this.host.calls.onTaskWrite(() => validate.taskId(taskId), false, async (id, lockTimeout) => {
      const { rows } = await this.statements.acquire.execute(this.host.database.db, {
        taskId: id,
        runnerId: this.runnerId,
        leaseMs: this.settings.leaseMs,
        lockTimeout,
      });
      if (rows.length > 0) this.held.add(id);
      return rows.length > 0;
    });
  }

  async releaseLease(taskId: string): Promise<boolean> {
    return this.host.calls.onTaskWrite(() => validate.taskId(taskId), false, async (id, lockTimeout) => {
      this.held.delete(id);
      const { rows } = await this.statements.release.execute(this.host.database.db, { taskId: id, runnerId: this.runnerId, lockTimeout });
      return rows.length > 0;
    });
  }

  async abandonLeases(): Promise<number> {
    return this.host.calls.run(async () => {
      const listing = this.listing();
      this.held.clear();
      this.unlisted.clear();
      const count = listing.renewIds.length;
      if (count === 0) return 0;
      // A heartbeat under way still renews the leases it read before they were let go: after it.
      await this.beating?.catch(() => undefined);
      await this.statements.abandon.execute(this.host.database.db, { runnerId: this.runnerId, ...listing });
      return count;
    });
  }

  onResume(toolName: string, hook: ResumeHook): () => void {
    return this.hooks.register(toolName, hook);
  }

  async leaseOf(taskId: string): Promise<LeaseState | null> {
    return this.host.calls.onTask(() => validate.taskId(taskId), null, async (id) => {
      const row = (await this.statements.leaseOf.execute(this.host.database.db, { taskId: id })).rows[0];
      if (!row) return null;
      return { runnerId: row.runner_id, expiresAt: row.expires_at.toISOString(), attempts: row.attempts, lostRunner: row.lost_runner };
    });
  }

  /** One pass over every expired lease, batch by batch; rescued tasks of this instance's tools are claimed at once. */
  async rescueLostTasks(): Promise<RescueResult> {
    return this.host.calls.run(() => {
      this.rescuing ??= this.rescuePass().finally(() => (this.rescuing = null));
      return this.rescuing;
    });
  }

  /** The task left this instance's hands: settled, cancelled or handed on by this instance. */
  ended(taskId: string): void {
    this.held.delete(taskId);
    this.unlisted.delete(taskId);
  }

  async close(): Promise<void> {
    this.stopped = true;
    if (this.heartbeat) clearInterval(this.heartbeat);
    if (this.rescuer) clearInterval(this.rescuer);
    await Promise.allSettled([this.beating, this.rescuing, ...this.resuming]);
  }

  private async rescueInBackground(): Promise<void> {
    await this.rescueLostTasks().catch((error: unknown) => this.host.telemetry.leaseTrouble('rescue', error));
  }

  private async rescuePass(): Promise<RescueResult> {
    const total: RescueResult = { failed: 0, resumed: 0 };
    let startedAt: Date | null = null;
    let limit = this.settings.rescueBatchSize;
    while (!this.stopped) {
      let batch: { result: RescueResult & { failedIds: string[]; rows: number }; at: Date } | null;
      try {
        batch = await inPhaseLock(this.host.database, 'rescue', async (trx) => {
          const rows = await this.expiredLeases(trx, limit);
          return { ...(await this.rescue(trx, rows)), rows: rows.length };
        });
      } catch (error) {
        if (!isTimeout(error) || limit === 1) throw error;
        limit = Math.max(1, Math.floor(limit / 2));
        continue;
      }
      if (batch === null) break;
      startedAt ??= batch.at;
      total.failed += batch.result.failed;
      total.resumed += batch.result.resumed;
      this.host.rescueFailed(batch.result.failedIds);
      if (batch.result.rows < limit) break;
    }
    if (startedAt !== null) {
      // Only the instance that held the phase lock: the others had nothing to rescue.
      await this.statements.forgetDeadRunners.execute(this.host.database.db, {});
      await recordActivity(this.host.database, 'rescue', startedAt, total.failed + total.resumed);
    }
    this.host.telemetry.rescued(total);
    if (total.resumed > 0) await this.claim();
    return total;
  }

  /** Expired listed leases, then the unlisted tasks of dead runners, up to `limit` in all. */
  private async expiredLeases(trx: StoreDatabase['db'], limit: number): Promise<RescuedRow[]> {
    const { rows } = await this.statements.expired.execute(trx, { limit });
    if (rows.length === limit) return rows;
    for (const runner of (await this.statements.deadRunners.execute(trx, {})).rows) {
      const { rows: unlisted } = await this.statements.unlisted.execute(trx, {
        runnerId: runner.runner_id,
        listedFrom: runner.listed_from,
        expiresAt: runner.expires_at,
        limit: limit - rows.length,
      });
      rows.push(...unlisted);
      if (rows.length === limit) break;
    }
    return rows;
  }

  /** Applies each tool's policy to a locked batch of expired leases. */
  private async rescue(trx: StoreDatabase['db'], rows: RescuedRow[]): Promise<RescueResult & { failedIds: string[] }> {
    const resumed: object[] = [];
    const failed: object[] = [];
    for (const row of rows) {
      const lostRunner = row.runner_id ?? row.lost_runner;
      if (rescueOutcome(this.settings, row.tool_name, row.attempts, this.hooks.has(row.tool_name)) === 'resume') {
        resumed.push({ task_id: row.task_id, lost_runner: lostRunner, message: resumedMessage(lostRunner, row.attempts) });
      } else {
        const error = lostRunnerError(lostRunner, row.expires_at, row.attempts);
        failed.push({ task_id: row.task_id, lost_runner: lostRunner, error, message: statusMessages.failed(error) });
      }
    }
    const failedIds =
      failed.length === 0
        ? []
        : (await this.statements.failRescued.execute(trx, { runnerId: this.runnerId, rescuedJson: JSON.stringify(failed) })).rows.map(
            (row) => row.task_id,
          );
    const resumedCount =
      resumed.length === 0
        ? 0
        : (
            await this.statements.resumeRescued.execute(trx, {
              runnerId: this.runnerId,
              leaseMs: this.settings.leaseMs,
              rescuedJson: JSON.stringify(resumed),
            })
          ).rows.length;
    return { failed: failedIds.length, resumed: resumedCount, failedIds };
  }

  /** Whether the runner's deadline, from the last beat heard back, is less than one interval away. */
  private beatIsStale(): boolean {
    return performance.now() - this.lastBeatSentAt > this.settings.leaseMs - this.settings.heartbeatMs;
  }

  private beat(): Promise<void> {
    this.beating ??= this.renewAndClaim().finally(() => (this.beating = null));
    return this.beating;
  }

  private async renewAndClaim(): Promise<void> {
    if (this.stopped) return;
    if (this.creates || this.held.size > 0) await this.renew();
    await this.claim();
  }

  private async renew(): Promise<void> {
    const listing = this.listing();
    const sentAt = performance.now();
    const { rows } = await this.statements.beat.execute(this.host.database.db, {
      runnerId: this.runnerId,
      leaseMs: this.settings.leaseMs,
      listedFromMs: this.listedFromMs(),
      ...listing,
    });
    this.clockMs = rows[0]!.clock_ms;
    this.lastBeatSentAt = sentAt;
    const stillHeld = new Set(rows[0]!.task_ids);
    for (const taskId of listing.listIds) this.unlisted.delete(taskId);
    // Gone from under us: ended by another instance (a cancel), or rescued after a late beat.
    for (const taskId of listing.renewIds) if (!stillHeld.has(taskId)) this.held.delete(taskId);
  }

  /** All held leases are renewed: one listed meanwhile (a beat under way, an acquire) has its row already. */
  private listing(): { listIds: string[]; renewIds: string[] } {
    return { listIds: [...this.unlisted], renewIds: [...this.held] };
  }

  /**
   * After this beat, the tasks left unlisted are those of the creates in flight now and of those
   * sent later: none was created before the clock of the last beat heard back from before it.
   */
  private listedFromMs(): number | null {
    let from = this.clockMs;
    for (const create of this.creating) from = Math.min(from ?? create.notBeforeMs, create.notBeforeMs);
    return from;
  }

  /** Takes rescued tasks of the tools this instance can resume, and runs their hooks. */
  private async claim(): Promise<void> {
    if (this.hooks.size === 0 || this.stopped) return;
    const { rows } = await this.statements.claim.execute(this.host.database.db, {
      runnerId: this.runnerId,
      leaseMs: this.settings.leaseMs,
      toolNames: this.hooks.toolNames(),
      limit: this.settings.rescueBatchSize,
    });
    for (const row of rows) {
      this.held.add(row.task_id);
      const run = this.resume(row).finally(() => this.resuming.delete(run));
      this.resuming.add(run);
    }
  }

  /** Runs a claimed task's hook, then ends the lease if the hook left the task open. */
  private async resume(row: ClaimedRow): Promise<void> {
    const taskId = row.task_id;
    try {
      const outcome = await this.hooks.run(this.host.store, { taskId, attempts: row.attempts, lostRunner: row.lost_runner, lastStatusMessage: row.lost_status });
      if (outcome === 'unregistered') {
        // Due again at once, so the next rescue counts the attempt and applies the policy.
        this.held.delete(taskId);
        await this.statements.abandon.execute(this.host.database.db, { runnerId: this.runnerId, listIds: [], renewIds: [taskId] });
      } else if (this.held.has(taskId)) {
        await this.releaseLease(taskId);
      }
    } catch (error) {
      if (!(error instanceof TaskStoreError) || error.kind !== 'backend' || !this.stopped) {
        this.host.telemetry.leaseTrouble('resume', error);
      }
    }
  }
}
