/**
 * Execution leases: the work of a task is as durable as its record.
 *
 * A store instance that runs a task holds a lease on it, renewed by a heartbeat. A lease whose
 * deadline passes means its runner died (a crash, `kill -9`, a partition from the database); the
 * rescuer then applies the tool's policy: `fail` the task with {@link lostRunnerError}, or `resume`
 * it, handing it to the {@link ResumeHook} an instance registered for the tool. Both stores
 * implement {@link TaskLeases} with the same rules, written here once:
 *
 * - While a task is leased, only the instance holding the lease records its progress and outcome
 *   (`setStatus`, `requireInput`, `completeTask`, `failTask`): a runner that lost its lease gets
 *   `false`, so it can never overwrite what the rescue decided. `cancelTask`, the client's call,
 *   works from anywhere and ends the lease.
 * - A task leaving `working`/`input_required` ends its lease in the same transaction.
 * - A task in `input_required` is never rescued: waiting for a person is not a dead runner. Its
 *   runner's heartbeat keeps renewing it; if that runner died meanwhile, the rescuer takes the
 *   task on its first pass after the answers return it to `working`.
 * - A rescue is recorded in the task's history, naming the lost runner and the rescuer.
 */
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import type { CancellationToken } from './cancellation.js';
import type { CreateTaskInput, JsonRpcError, TaskObject, TaskResumeContext, TaskStore } from './types.js';
import { readFields } from './validation.js';

export type LostRunnerPolicy = 'fail' | 'resume';

export interface LeaseOptions {
  /** How often an instance renews every lease it holds, in one statement. Default 10000. */
  heartbeatMs?: number;
  /** How long a lease lasts without a heartbeat; more than twice `heartbeatMs`. Default 30000. */
  leaseMs?: number;
  /** How often the rescuer looks for expired leases. Default: `heartbeatMs`. */
  rescueIntervalMs?: number;
  /** Leases a rescuer batch handles. Default 100. */
  rescueBatchSize?: number;
  /**
   * What a rescue does to a task whose tool names no policy in `tools`: `resume` where this
   * instance registered a resume hook for the tool, else this. Default `fail`.
   */
  onLost?: LostRunnerPolicy;
  /** Rescues that may resume one task; the next one fails it. Default 3. */
  maxAttempts?: number;
  /** Per tool name: its own policy and attempt limit. */
  tools?: Record<string, { onLost?: LostRunnerPolicy; maxAttempts?: number }>;
}

const milliseconds = z.number().int().min(1).max(2 ** 31 - 1);
const policySchema = z.enum(['fail', 'resume']);
const attemptsSchema = z.number().int().min(0).max(1000);

export const leaseOptionsSchema = z
  .strictObject({
    heartbeatMs: milliseconds.optional(),
    leaseMs: milliseconds.optional(),
    rescueIntervalMs: milliseconds.optional(),
    rescueBatchSize: z.number().int().min(1).max(10_000).optional(),
    onLost: policySchema.optional(),
    maxAttempts: attemptsSchema.optional(),
    tools: readFields(
      z.record(z.string().min(1), readFields(z.strictObject({ onLost: policySchema.optional(), maxAttempts: attemptsSchema.optional() }))),
    ).optional(),
  })
  .refine((options) => (options.leaseMs ?? DEFAULT_LEASE_MS) > 2 * (options.heartbeatMs ?? DEFAULT_HEARTBEAT_MS), {
    message: 'leaseMs must be more than twice heartbeatMs, so one late heartbeat does not lose a lease',
    path: ['leaseMs'],
  });

export const DEFAULT_HEARTBEAT_MS = 10_000;
export const DEFAULT_LEASE_MS = 30_000;

export interface LeaseSettings {
  heartbeatMs: number;
  leaseMs: number;
  rescueIntervalMs: number;
  rescueBatchSize: number;
  onLost: LostRunnerPolicy;
  maxAttempts: number;
  tools: Record<string, { onLost?: LostRunnerPolicy; maxAttempts?: number }>;
}

export function leaseSettings(options: z.output<typeof leaseOptionsSchema> | undefined): LeaseSettings {
  const heartbeatMs = options?.heartbeatMs ?? DEFAULT_HEARTBEAT_MS;
  return {
    heartbeatMs,
    leaseMs: options?.leaseMs ?? DEFAULT_LEASE_MS,
    rescueIntervalMs: options?.rescueIntervalMs ?? heartbeatMs,
    rescueBatchSize: options?.rescueBatchSize ?? 100,
    onLost: options?.onLost ?? 'fail',
    maxAttempts: options?.maxAttempts ?? 3,
    tools: options?.tools ?? {},
  };
}

/** `<host>:<pid>:<random>`: unique per store instance, and tells an operator where it ran. */
export function newRunnerId(): string {
  return `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
}

/** What the rescuer does with one expired lease: `resume` only while attempts remain. */
export function rescueOutcome(
  settings: LeaseSettings,
  toolName: string,
  attemptsSoFar: number,
  hasLocalHook: boolean,
): LostRunnerPolicy {
  const tool = settings.tools[toolName];
  const policy = tool?.onLost ?? (hasLocalHook ? 'resume' : settings.onLost);
  const maxAttempts = tool?.maxAttempts ?? settings.maxAttempts;
  return policy === 'resume' && attemptsSoFar < maxAttempts ? 'resume' : 'fail';
}

/** JSON-RPC's internal error: the call produced no result because its runner is gone. */
export const LOST_RUNNER_CODE = -32603;

/**
 * The error a rescue fails a task with; its status message is "Task failed: " and this message.
 * `data.reason` is always `runner_lost`, for clients that tell it apart from a tool's own failure.
 */
export function lostRunnerError(lostRunner: string | null, leaseExpiredAt: Date, attempts: number): JsonRpcError {
  const runner = lostRunner ?? 'no instance';
  const resumes = attempts === 0 ? '' : ` after ${attempts} resume${attempts === 1 ? '' : 's'}`;
  return {
    code: LOST_RUNNER_CODE,
    message: `runner ${runner} stopped renewing its lease (expired ${leaseExpiredAt.toISOString()})${resumes}; the task was abandoned`,
    data: { reason: 'runner_lost', lostRunner, leaseExpiredAt: leaseExpiredAt.toISOString(), attempts },
  };
}

export const RESUMING_PREFIX = 'Resuming after runner ';

/** The status message of a task handed to a resume hook. */
export function resumedMessage(lostRunner: string | null, attempts: number): string {
  return `${RESUMING_PREFIX}${lostRunner ?? 'no instance'} was lost (resume ${attempts + 1})`;
}

/** The progress a lost run last reported, kept across a resume that reported none. */
export function lostStatus(statusMessage: string, previous: string | null): string | null {
  return statusMessage.startsWith(RESUMING_PREFIX) ? previous : statusMessage;
}

/** What a {@link ResumeHook} is given: the task as it stands, and how to run it again. */
export interface ResumeRequest {
  taskId: string;
  task: TaskObject;
  /** The arguments, every input answer so far, and the task's token. */
  context: TaskResumeContext;
  /** Runs before this one that a rescue ended (1 for the first resume). */
  previousAttempts: number;
  /** The runner whose lease expired. */
  lostRunner: string | null;
  /**
   * The last status message the lost run reported (its progress), where a resumable tool picks
   * up: `task.statusMessage` says the task is resuming.
   */
  lastStatusMessage: string | null;
}

/**
 * Runs a rescued task again on this instance, which holds its lease meanwhile. It records the
 * outcome as any run does (`completeTask`, `failTask`), and its promise is the run: once it
 * settles, the lease ends. One that throws fails the task. The progress the lost run reported is
 * `lastStatusMessage`, so a tool can pick up where it was.
 */
export type ResumeHook = (request: ResumeRequest) => Promise<void>;

/** What one rescuer pass did. */
export interface RescueResult {
  /** Expired leases whose task the rescue failed. */
  failed: number;
  /** Expired leases handed on to a resume hook. */
  resumed: number;
}

/** A task's lease as it stands; `runnerId` null while a rescued task waits for a resume. */
export interface LeaseState {
  runnerId: string | null;
  /** ISO-8601, on the store's clock. */
  expiresAt: string;
  /** Rescues so far. */
  attempts: number;
  lostRunner: string | null;
}

/** What {@link TaskLeases.createLeasedTask} returns. */
export interface LeasedTask {
  taskId: string;
  token: CancellationToken;
  task: TaskObject;
}

/** A store's `leases`: see the module comment for the rules both stores keep. */
export interface TaskLeases {
  /** This instance's runner id, as operators see it in the lease. */
  readonly runnerId: string;
  /**
   * `createTask`, leased to this instance in the same step: for the instance that will run it.
   * `task` is the task as created, so the runner need not read it back.
   */
  createLeasedTask(input: CreateTaskInput): Promise<LeasedTask>;
  /**
   * Takes the lease of a live, open task for this instance (a run after input, say): `false` if
   * the task is unknown, expired or terminal, or another runner holds a lease on it.
   */
  acquireLease(taskId: string): Promise<boolean>;
  /** Ends this instance's lease on a task it stopped running; `false` if it held none. */
  releaseLease(taskId: string): Promise<boolean>;
  /**
   * Gives up every lease this instance holds, due now: for a process about to exit without
   * finishing its work, so the next rescuer pass hands the tasks on instead of one lease later.
   */
  abandonLeases(): Promise<number>;
  /** Registers how this instance resumes rescued tasks of a tool. Returns an unregister function. */
  onResume(toolName: string, hook: ResumeHook): () => void;
  /** One rescuer pass, as the automatic rescuer runs them. */
  rescueLostTasks(): Promise<RescueResult>;
  /** `null`: no lease (never leased, ended, or unknown task). */
  leaseOf(taskId: string): Promise<LeaseState | null>;
}

/** A store with execution leases, as both of this package's stores are. */
export type LeasingTaskStore = TaskStore & { readonly leases: TaskLeases };

/** Whether a store offers leases (both of this package's stores do; a user's own may not). */
export function offersLeases(store: TaskStore): store is LeasingTaskStore {
  const leases = (store as Partial<LeasingTaskStore>).leases;
  return typeof leases === 'object' && leases !== null && typeof leases.createLeasedTask === 'function';
}

/**
 * Creates a task for this instance to run: leased to it when the store offers leases. `task` is the
 * task as created (read back from a store without leases), null if it expired at once.
 */
export async function createTaskToRun(store: TaskStore, input: CreateTaskInput): Promise<{ taskId: string; token: CancellationToken; task: TaskObject | null }> {
  if (offersLeases(store)) {
    const created = await store.leases.createLeasedTask(input);
    return created.token.isCancelled ? { ...created, task: null } : created;
  }
  const { taskId, token } = await store.createTask(input);
  return { taskId, token, task: await store.getTask(taskId) };
}

export const toolNameSchema = z.string().min(1).max(1024);
export const resumeHookSchema = z.custom<ResumeHook>((value) => typeof value === 'function', 'must be a function');
