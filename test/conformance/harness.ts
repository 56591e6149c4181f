/**
 * Shared pieces of the TaskStore conformance suite: the target a store implementation provides,
 * store bookkeeping (every store a test opens is closed after it), fixtures, and assertions.
 *
 * Nothing here knows which store it runs against. Waits are bounded by {@link BOUND}, which a
 * passing store never reaches, so a slow store fails with a message instead of hanging.
 */
import { afterEach, expect } from 'vitest';
import { within } from '../support/time.js';
import {
  TaskStoreError,
  generateTaskId,
  isTerminal,
  type CallToolResult,
  type CancellationToken,
  type InputRequest,
  type InputRequests,
  type InputResponses,
  type JsonRpcError,
  type LeaseOptions,
  type RetentionLimits,
  type TaskObject,
  type TaskOwner,
  type TaskSnapshot,
  type TaskStatus,
  type TaskStore,
  type TaskStoreErrorKind,
} from '../../src/index.js';

export { BOUND_MS, eventually, sleep, stillPending, within } from '../support/time.js';

/** A store that can also run one cleanup pass by hand. */
export type ReapableTaskStore = TaskStore & {
  /** One pass: expired live tasks become tombstones; tombstones older than the retention are purged. */
  reapExpired(): Promise<{ tombstoned: number; purged: number }>;
};

export interface StoreOptions {
  defaultTtlMs?: number;
  limits?: RetentionLimits;
  /** How long reapExpired() keeps tombstones (0 = purge at the next pass). */
  tombstoneRetentionMs?: number;
  leases?: LeaseOptions;
}

/**
 * Limits a store may enforce beyond the ones every store must. The suite runs the matching checks
 * only for a target that claims them; the PostgreSQL store, for one, has no global task count.
 */
export interface ConformanceCapabilities {
  /** `limits.maxTasks` is enforced. */
  maxTasks: boolean;
  /** `limits.maxRetainedBytes` is enforced. */
  maxRetainedBytes: boolean;
  /** The optional TaskChangeFeed (`watchTasks`) is offered. */
  changeFeed: boolean;
}

export interface ConformanceTarget {
  name: string;
  /** Optional limits this store enforces. Omitted flags are false. */
  capabilities?: Partial<ConformanceCapabilities>;
  /**
   * A new store over empty state. It must not run cleanup passes on its own while a test runs
   * (disable or lengthen any automatic reaper): the suite drives them with reapExpired().
   * tombstoneRetentionMs: how long reapExpired() keeps tombstones (0 = purge at the next pass).
   */
  createStore(options?: StoreOptions): Promise<ReapableTaskStore>;
}

/** A ttl that outlives every check. */
export const LONG_TTL = 60_000;
/** A ttl short enough to let a test watch it elapse. */
export const SHORT_TTL = 150;

/**
 * Registers an afterEach that closes every store the returned function opened during the test.
 * Call once per describe block.
 */
export function useStores(target: ConformanceTarget): (options?: StoreOptions) => Promise<ReapableTaskStore> {
  const open: ReapableTaskStore[] = [];
  afterEach(async () => {
    const stores = open.splice(0);
    await Promise.all(stores.map((store) => store.close()));
  });
  return async (options) => {
    const store = await target.createStore(options);
    open.push(store);
    return store;
  };
}

export function capabilities(target: ConformanceTarget): ConformanceCapabilities {
  return { maxTasks: false, maxRetainedBytes: false, changeFeed: false, ...target.capabilities };
}

// -- Time -------------------------------------------------------------------------------------

/** Resolves when the token is raised, failing the test after the bound. */
export function raised(token: CancellationToken, what = 'the token being raised'): Promise<void> {
  return within(what, token.whenCancelled());
}

// -- Fixtures ---------------------------------------------------------------------------------

export const TOOL = 'contract-tool';

export function unknownId(): string {
  return generateTaskId();
}

export function resultText(text: string): CallToolResult {
  return { content: [{ type: 'text', text }] };
}

export function sampleError(): JsonRpcError {
  return { code: -32602, message: 'unknown region', data: { field: 'region' } };
}

export const ROOTS: InputRequest = { method: 'roots/list' };

/** The same request under every key. */
export function ask(...keys: string[]): InputRequests {
  return Object.fromEntries(keys.map((key) => [key, ROOTS]));
}

export function elicit(message: string): InputRequest {
  return {
    method: 'elicitation/create',
    params: { mode: 'form', message, requestedSchema: { type: 'object', properties: {} } },
  };
}

/** A request that differs from what {@link ask} issues for the same key. */
export function askSomethingElse(key: string): InputRequests {
  return { [key]: elicit('a different question') };
}

export function accept(content?: Record<string, unknown>): Record<string, unknown> {
  return content === undefined ? { action: 'accept' } : { action: 'accept', content };
}

export function answers(...keys: string[]): InputResponses {
  return Object.fromEntries(keys.map((key) => [key, accept()]));
}

/** Deliberately ill-typed input, for validation checks. */
export function bad<T>(value: unknown): T {
  return value as T;
}

// -- Store shortcuts --------------------------------------------------------------------------

export async function createTask(
  store: TaskStore,
  options: { owner?: TaskOwner; ttlMs?: number | null; arguments?: unknown; toolName?: string } = {},
): Promise<{ id: string; token: CancellationToken }> {
  const { taskId, token } = await store.createTask({
    toolName: options.toolName ?? TOOL,
    arguments: 'arguments' in options ? options.arguments : { n: 1 },
    ttlMs: 'ttlMs' in options ? options.ttlMs : LONG_TTL,
    owner: options.owner ?? null,
  });
  return { id: taskId, token };
}

export async function mustGet(store: TaskStore, id: string): Promise<TaskObject> {
  const task = await store.getTask(id);
  if (task === null) throw new Error(`getTask(${id}) returned null for a task that must be readable`);
  expectWellFormed(task);
  return task;
}

export async function mustSnapshot(store: TaskStore, id: string): Promise<TaskSnapshot> {
  const snapshot = await store.getTaskResult(id);
  if (snapshot === null) throw new Error(`getTaskResult(${id}) returned null for a task that must be readable`);
  expectWellFormed(snapshot.task);
  return snapshot;
}

export async function statusOf(store: TaskStore, id: string): Promise<TaskStatus> {
  return (await mustGet(store, id)).status;
}

export async function outstandingKeys(store: TaskStore, id: string): Promise<string[]> {
  const requests = await store.outstandingInputRequests(id);
  if (requests === null) throw new Error(`outstandingInputRequests(${id}) returned null for a readable task`);
  return Object.keys(requests).sort();
}

export type Finish = 'complete' | 'fail' | 'cancel';
export const FINISHES: readonly Finish[] = ['complete', 'fail', 'cancel'];
export const FINISHED_STATUS: Record<Finish, TaskStatus> = {
  complete: 'completed',
  fail: 'failed',
  cancel: 'cancelled',
};

/** Drives a live task to a terminal state, asserting the call applied. */
export async function finish(store: TaskStore, id: string, how: Finish): Promise<void> {
  switch (how) {
    case 'complete':
      expect(await store.completeTask(id, resultText('done')), 'completeTask applies to a live task').toBe(true);
      return;
    case 'fail':
      expect(await store.failTask(id, sampleError()), 'failTask applies to a live task').toBe(true);
      return;
    case 'cancel':
      expect(await store.cancelTask(id, 'contract'), 'cancelTask applies to a live task').not.toBeNull();
      return;
  }
}

/** Every id listed by walking all pages of `listTasks`. */
export async function listAllIds(store: TaskStore, options: { status?: TaskStatus; owner?: TaskOwner } = {}): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < 1_000; page++) {
    const result = await store.listTasks({ ...options, limit: 1_000, ...(cursor === undefined ? {} : { cursor }) });
    ids.push(...result.tasks.map((task) => task.taskId));
    if (result.nextCursor === null) return ids;
    cursor = result.nextCursor;
  }
  throw new Error('listTasks never returned a null nextCursor');
}

// -- Assertions -------------------------------------------------------------------------------

export const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

const TASK_OBJECT_KEYS = new Set(['taskId', 'status', 'statusMessage', 'createdAt', 'lastUpdatedAt', 'ttlMs', 'pollIntervalMs', '_meta']);

/** The wire shape: known keys only, no undefined-valued keys, timestamps in the fixed format. */
export function expectWellFormed(task: TaskObject): void {
  for (const [key, value] of Object.entries(task)) {
    expect(TASK_OBJECT_KEYS.has(key), `TaskObject carries an unexpected key ${key}`).toBe(true);
    expect(value, `TaskObject.${key} is present but undefined; absent fields must be omitted`).not.toBeUndefined();
  }
  expect(task.taskId).toMatch(/^[0-9a-f]{32}$/);
  expect(['working', 'input_required', 'completed', 'failed', 'cancelled']).toContain(task.status);
  for (const stamp of [task.createdAt, task.lastUpdatedAt]) {
    expect(stamp).toHaveLength(24);
    expect(stamp).toMatch(ISO_MS);
    expect(new Date(stamp).toISOString()).toBe(stamp);
  }
  expect(task.lastUpdatedAt >= task.createdAt, 'lastUpdatedAt is never before createdAt').toBe(true);
  if (task.ttlMs !== null) expect(Number.isSafeInteger(task.ttlMs) && task.ttlMs >= 0).toBe(true);
  if ('statusMessage' in task) expect(typeof task.statusMessage).toBe('string');
  if ('pollIntervalMs' in task) expect(Number.isSafeInteger(task.pollIntervalMs)).toBe(true);
  if ('_meta' in task) expect(task._meta).toBeTypeOf('object');
}

/** A snapshot a waiter returned: always terminal, never a running task. */
export function expectTerminalSnapshot(snapshot: TaskSnapshot | null, status: TaskStatus): TaskSnapshot {
  expect(snapshot, `expected a ${status} snapshot, got null`).not.toBeNull();
  const taken = snapshot!;
  expectWellFormed(taken.task);
  expect(isTerminal(taken.task.status), `a waiter returned a ${taken.task.status} task`).toBe(true);
  expect(taken.task.status).toBe(status);
  return taken;
}

/** Awaits `promise` and asserts it rejects with a TaskStoreError of `kind`. */
export async function expectStoreError(promise: Promise<unknown>, kind: TaskStoreErrorKind, what = 'the call'): Promise<TaskStoreError> {
  let outcome: { ok: true; value: unknown } | { ok: false; error: unknown };
  try {
    outcome = { ok: true, value: await promise };
  } catch (error) {
    outcome = { ok: false, error };
  }
  if (outcome.ok) {
    throw new Error(`${what} returned ${safeStringify(outcome.value)} instead of throwing TaskStoreError(${kind})`);
  }
  const error = outcome.error;
  expect(error, `${what} threw something other than a TaskStoreError: ${String(error)}`).toBeInstanceOf(TaskStoreError);
  expect((error as TaskStoreError).kind, `${what} threw ${(error as Error).message}`).toBe(kind);
  return error as TaskStoreError;
}

function safeStringify(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/** Everything observable about some tasks and the listing, for "nothing changed" checks. */
export async function observe(store: TaskStore, ids: string[]): Promise<unknown> {
  const listed = (await listAllIds(store)).sort();
  const tasks = await Promise.all(
    ids.map(async (id) => {
      const [snapshot, outstanding, responses, presence, owner] = await Promise.all([
        store.getTaskResult(id),
        store.outstandingInputRequests(id),
        store.inputResponses(id),
        store.taskPresence(id),
        store.taskOwner(id),
      ]);
      return { id, snapshot, outstanding, responses, presence, owner };
    }),
  );
  return { listed, tasks };
}

/** JSON of exactly `bytes` UTF-8 bytes: `build(padding)` with padding chosen to fit. */
export function sized<T>(bytes: number, build: (padding: string) => T): T {
  const base = byteSize(build(''));
  if (base > bytes) throw new Error(`cannot build a ${bytes}-byte payload: the frame alone is ${base} bytes`);
  const value = build('x'.repeat(bytes - base));
  expect(byteSize(value)).toBe(bytes);
  return value;
}

export function byteSize(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value), 'utf8');
}
