/**
 * MemoryTaskStore's execution leases (src/contract/leases.ts has the rules), kept on each task's
 * record. One process is one runner, so a lease here expires only when the process stalls past
 * it or gives it up with `abandonLeases`; the store keeps the rules anyway, so an application
 * and its tests see the same behaviour on both stores.
 */
import {
  lostRunnerError,
  lostStatus,
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
import { ResumeHooks, type ClaimedTask } from '../contract/resume-hooks.js';
import { scheduleRepeating } from '../contract/timers.js';
import type { CreateTaskInput, JsonRpcError, TaskStore } from '../contract/types.js';
import { validate } from '../contract/validation.js';
import type { LiveTask } from './task-record.js';
import type { TaskTable } from './task-table.js';

/** What the leases need of their store: its tasks, its atomic steps, and its own calls. */
export interface MemoryLeaseHost {
  store: TaskStore;
  /** `createTask`, leased to `leases` in the same step. */
  createLeased(input: CreateTaskInput): Promise<LeasedTask>;
  /** Runs one atomic step of the store (refused once it is closed). */
  run<T>(operation: () => T): T;
  table: Pick<TaskTable, 'live' | 'liveTasks' | 'update'>;
  /** Fails a task in the step that rescues it. */
  fail(task: LiveTask, error: JsonRpcError): void;
}

export class MemoryLeases implements TaskLeases {
  readonly runnerId = newRunnerId();
  private readonly hooks = new ResumeHooks();
  /** The tasks this instance runs: what each heartbeat renews. */
  private readonly held = new Set<string>();
  private readonly resuming = new Set<Promise<void>>();
  private readonly stopTimers: () => void;

  constructor(
    private readonly host: MemoryLeaseHost,
    readonly settings: LeaseSettings,
  ) {
    const stopHeartbeat = scheduleRepeating(settings.heartbeatMs, () => this.renew());
    const stopRescuer = scheduleRepeating(settings.rescueIntervalMs, () => void this.rescueLostTasks().catch(() => {}));
    this.stopTimers = () => {
      stopHeartbeat();
      stopRescuer();
    };
  }

  /** Whether this runner may record a task's progress or outcome: unleased, or leased to it. */
  allows(task: LiveTask): boolean {
    return task.lease === null || task.lease.runnerId === this.runnerId;
  }

  /** Leases a task the store is creating, in the same step. */
  lease(task: LiveTask): void {
    this.held.add(task.taskId);
    task.lease = { runnerId: this.runnerId, expiresAtMs: this.deadline(), attempts: 0, lostRunner: null, lostStatus: null };
  }

  async createLeasedTask(input: CreateTaskInput): Promise<LeasedTask> {
    return this.host.createLeased(input);
  }

  async acquireLease(taskId: string): Promise<boolean> {
    return this.host.run(() => {
      const task = this.host.table.live(validate.taskId(taskId));
      if (!task || (task.status !== 'working' && task.status !== 'input_required') || !this.allows(task)) return false;
      if (task.lease) task.lease = { ...task.lease, expiresAtMs: this.deadline() };
      else this.host.table.update(task, () => this.lease(task));
      this.held.add(task.taskId);
      return true;
    });
  }

  async releaseLease(taskId: string): Promise<boolean> {
    return this.host.run(() => {
      const id = validate.taskId(taskId);
      this.held.delete(id);
      const task = this.host.table.live(id);
      if (!task || task.lease?.runnerId !== this.runnerId) return false;
      this.host.table.update(task, () => (task.lease = null));
      return true;
    });
  }

  async abandonLeases(): Promise<number> {
    return this.host.run(() => {
      const now = Date.now();
      const held = this.heldTasks();
      this.held.clear();
      for (const task of held) task.lease = { ...task.lease!, expiresAtMs: now };
      return held.length;
    });
  }

  onResume(toolName: string, hook: ResumeHook): () => void {
    return this.hooks.register(toolName, hook);
  }

  async leaseOf(taskId: string): Promise<LeaseState | null> {
    return this.host.run(() => {
      const lease = this.host.table.live(validate.taskId(taskId))?.lease;
      if (!lease) return null;
      return { runnerId: lease.runnerId, expiresAt: new Date(lease.expiresAtMs).toISOString(), attempts: lease.attempts, lostRunner: lease.lostRunner };
    });
  }

  async rescueLostTasks(): Promise<RescueResult> {
    const { result, claimed } = this.host.run(() => this.rescue());
    for (const task of claimed) this.startResume(task);
    return result;
  }

  async close(): Promise<void> {
    this.stopTimers();
    await Promise.allSettled([...this.resuming]);
  }

  /** One atomic pass: fails or hands on every task of an expired lease, then claims what it can resume. */
  private rescue(): { result: RescueResult; claimed: ClaimedTask[] } {
    const now = Date.now();
    const result: RescueResult = { failed: 0, resumed: 0 };
    for (const task of this.host.table.liveTasks()) {
      const lease = task.lease;
      if (!lease || lease.expiresAtMs > now || task.status !== 'working') continue;
      const lostRunner = lease.runnerId ?? lease.lostRunner;
      if (rescueOutcome(this.settings, task.toolName, lease.attempts, this.hooks.has(task.toolName)) === 'resume') {
        this.host.table.update(task, () => {
          const lost = lostStatus(task.statusMessage, lease.lostStatus);
          task.lease = { runnerId: null, expiresAtMs: this.deadline(), attempts: lease.attempts + 1, lostRunner, lostStatus: lost };
          task.statusMessage = resumedMessage(lostRunner, lease.attempts);
          task.lastUpdatedAtMs = now;
        });
        result.resumed++;
      } else {
        const error = lostRunnerError(lostRunner, new Date(lease.expiresAtMs), lease.attempts);
        this.host.fail(task, error);
        result.failed++;
      }
    }
    return { result, claimed: this.claim() };
  }

  /** Takes the rescued tasks this instance has a resume hook for. */
  private claim(): ClaimedTask[] {
    const claimed: ClaimedTask[] = [];
    if (this.hooks.size === 0) return claimed;
    for (const task of this.host.table.liveTasks()) {
      const lease = task.lease;
      if (!lease || lease.runnerId !== null || task.status !== 'working' || !this.hooks.has(task.toolName)) continue;
      this.host.table.update(task, () => (task.lease = { ...lease, runnerId: this.runnerId, expiresAtMs: this.deadline() }));
      this.held.add(task.taskId);
      claimed.push({ taskId: task.taskId, attempts: lease.attempts, lostRunner: lease.lostRunner, lastStatusMessage: lease.lostStatus });
    }
    return claimed;
  }

  private startResume(claimed: ClaimedTask): void {
    const run = this.resume(claimed).finally(() => this.resuming.delete(run));
    this.resuming.add(run);
  }

  private async resume(claimed: ClaimedTask): Promise<void> {
    try {
      const outcome = await this.hooks.run(this.host.store, claimed);
      if (outcome === 'unregistered') {
        this.host.run(() => {
          this.held.delete(claimed.taskId);
          const task = this.host.table.live(claimed.taskId);
          if (task?.lease?.runnerId === this.runnerId) task.lease = { ...task.lease, expiresAtMs: Date.now() };
        });
      } else {
        await this.releaseLease(claimed.taskId);
      }
    } catch {
      // The store closed under the hook; there is nothing left to record it in.
    }
  }

  /** The heartbeat: a stalled process is the only way a memory lease can run out. */
  private renew(): void {
    try {
      this.host.run(() => {
        const deadline = this.deadline();
        for (const task of this.heldTasks()) task.lease = { ...task.lease!, expiresAtMs: deadline };
      });
    } catch {
      // Closed: the timers stop with it.
    }
  }

  /** The held tasks still leased to this instance; the rest (settled, cancelled, gone) are dropped. */
  private heldTasks(): LiveTask[] {
    const tasks: LiveTask[] = [];
    for (const taskId of this.held) {
      const task = this.host.table.live(taskId);
      if (task?.lease?.runnerId === this.runnerId) tasks.push(task);
      else this.held.delete(taskId);
    }
    return tasks;
  }

  private deadline(): number {
    return Date.now() + this.settings.leaseMs;
  }
}
