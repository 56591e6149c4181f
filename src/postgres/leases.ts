/**
 * PostgresTaskStore's execution leases (src/contract/leases.ts has the rules): the leases this
 * instance holds and their heartbeat, the resume hooks it registered and the claims that feed
 * them, and the rescuer.
 *
 * The heartbeat renews every lease the instance holds in one statement per interval, and learns
 * from it which ones it lost (a rescue, a cancel elsewhere). An instance with resume hooks also
 * claims rescued tasks of its tools on each beat. The rescuer runs in the reaper's way: one
 * instance at a time under the `rescue` phase's advisory lock, in batches of locked rows, each
 * recorded in reaper_activity.
 */
import { TaskStoreError } from '../contract/errors.js';
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
  /** createTask, leased to `runnerId` in the same statement. */
  createLeased(input: CreateTaskInput, lease: { runnerId: string; leaseMs: number }): Promise<LeasedTask>;
  /** Told of the tasks a rescue on this instance failed, once committed. */
  rescueFailed(taskIds: string[]): void;
}

export class PostgresLeases implements TaskLeases {
  readonly runnerId = newRunnerId();
  private readonly statements: LeaseStatements;
  /** The tasks this instance runs: what each heartbeat renews. */
  private readonly held = new Set<string>();
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
    this.heartbeat = setInterval(() => void this.beat(), settings.heartbeatMs).unref();
    if (automaticRescue) this.rescuer = setInterval(() => void this.rescueInBackground(), settings.rescueIntervalMs).unref();
  }

  async createLeasedTask(input: CreateTaskInput): Promise<LeasedTask> {
    const created = await this.host.createLeased(input, { runnerId: this.runnerId, leaseMs: this.settings.leaseMs });
    this.held.add(created.taskId);
    return created;
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
      const taskIds = [...this.held];
      this.held.clear();
      if (taskIds.length === 0) return 0;
      // A heartbeat under way still renews the leases it read before they were let go: after it.
      await this.beating;
      await this.statements.abandon.execute(this.host.database.db, { runnerId: this.runnerId, taskIds });
      return taskIds.length;
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
          const { rows } = await this.statements.expired.execute(trx, { limit });
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
    if (startedAt !== null) await recordActivity(this.host.database, 'rescue', startedAt, total.failed + total.resumed);
    this.host.telemetry.rescued(total);
    if (total.resumed > 0) await this.claim();
    return total;
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

  private beat(): Promise<void> {
    this.beating ??= this.renewAndClaim()
      .catch((error: unknown) => this.host.telemetry.leaseTrouble('heartbeat', error))
      .finally(() => (this.beating = null));
    return this.beating;
  }

  private async renewAndClaim(): Promise<void> {
    if (this.stopped) return;
    const taskIds = [...this.held];
    if (taskIds.length > 0) {
      const { rows } = await this.statements.renew.execute(this.host.database.db, {
        runnerId: this.runnerId,
        leaseMs: this.settings.leaseMs,
        taskIds,
      });
      const renewed = new Set(rows.map((row) => row.task_id));
      // Gone from under us: ended by another instance (a cancel), or rescued after a late beat.
      for (const taskId of taskIds) if (!renewed.has(taskId)) this.held.delete(taskId);
    }
    await this.claim();
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
        await this.statements.abandon.execute(this.host.database.db, { runnerId: this.runnerId, taskIds: [taskId] });
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
