/**
 * SdkTaskStore called as the SDK calls a TaskStore, over both contract stores. The first part is
 * the SDK's own InMemoryTaskStore tests (typescript-sdk test/experimental/tasks/stores/
 * in-memory.test.ts), case by case, except those that need fake timers; the rest is what the
 * adapter adds: ownership, session scoping, TTL handling, error mapping.
 */
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import { ErrorCode, McpError, type Request, type Result } from '@modelcontextprotocol/sdk/types.js';
import type pg from 'pg';
import { randomUUID } from 'node:crypto';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { MemoryTaskStore, migrate, PostgresTaskStore, type TaskStore } from '../../src/index.js';
import { createPool } from '../../src/postgres/pool.js';
import {
  MemorySessionTaskIndex,
  PostgresSessionTaskIndex,
  SdkTaskStore,
  withTaskRequestContext,
  type SdkTaskStoreOptions,
  type SessionTaskIndex,
} from '../../src/sdk/index.js';
import { useTestDatabase } from '../support/test-database.js';
import { raised } from '../conformance/harness.js';

const database = useTestDatabase();
const SCHEMA = 'sdk_adapter';
let pool: pg.Pool;
beforeAll(async () => {
  pool = createPool(database.connectionString, 10);
  await migrate({ pool, schema: SCHEMA });
  return () => pool.end();
});

const opened: { close(): Promise<void> | void }[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((thing) => thing.close()));
});

interface Backend {
  name: string;
  store(): TaskStore;
  sessions(): SessionTaskIndex;
}

const backends: Backend[] = [
  {
    name: 'PostgresTaskStore',
    store: () => new PostgresTaskStore({ pool, schema: SCHEMA, reaper: false }),
    sessions: () => new PostgresSessionTaskIndex({ pool, schema: SCHEMA }),
  },
  { name: 'MemoryTaskStore', store: () => new MemoryTaskStore(), sessions: () => new MemorySessionTaskIndex() },
];

const callRequest: Request = { method: 'tools/call', params: { name: 'test-tool', arguments: { n: 1 } } };
const text = (value: string) => ({ content: [{ type: 'text' as const, text: value }] });
const user = (name: string): AuthInfo => ({ token: 't', clientId: 'app', scopes: [], extra: { sub: name } });
const sorted = (ids: string[]) => [...ids].sort();
const idsOf = (page: { tasks: { taskId: string }[] }) => sorted(page.tasks.map((task) => task.taskId));

// One schema serves every test: each test has sessions and principals of its own.
let alice: AuthInfo;
let bob: AuthInfo;
let sessionA: string;
let sessionB: string;
beforeEach(() => {
  const unique = randomUUID();
  alice = user(`alice-${unique}`);
  bob = user(`bob-${unique}`);
  sessionA = `a-${unique}`;
  sessionB = `b-${unique}`;
});

describe.each(backends)('SdkTaskStore on $name', (backend) => {
  function open(options: SdkTaskStoreOptions = {}) {
    const store = backend.store();
    const sessions = backend.sessions();
    opened.push(store, sessions);
    return new SdkTaskStore(store, { sessions, ...options });
  }

  /** As a request of `authInfo`'s caller (anonymous without one) would. */
  const as = <T>(authInfo: AuthInfo | undefined, fn: () => Promise<T>) =>
    withTaskRequestContext(authInfo ? { authInfo } : {}, fn);

  const create = (tasks: SdkTaskStore, params = {}, sessionId?: string, authInfo?: AuthInfo) =>
    as(authInfo, () => tasks.createTask(params, 1, callRequest, sessionId));

  describe('createTask (InMemoryTaskStore counterparts)', () => {
    it('creates a working task with the requested ttl', async () => {
      const tasks = open();
      const task = await create(tasks, { ttl: 60000 });
      expect(task.taskId).toMatch(/^[0-9a-f]{32}$/);
      expect(task.status).toBe('working');
      expect(task.ttl).toBe(60000);
      expect(task.pollInterval).toBeDefined();
      expect(new Date(task.createdAt).getTime()).toBeGreaterThan(0);
    });

    it('without a ttl, the task gets the store default (InMemoryTaskStore: never expires)', async () => {
      const task = await create(open(), {});
      expect(task.ttl).toBe(300000);
    });

    it('generates unique task ids', async () => {
      const tasks = open();
      expect((await create(tasks)).taskId).not.toBe((await create(tasks)).taskId);
    });

    it('records the tool name and arguments of the call', async () => {
      const tasks = open();
      const { taskId } = await create(tasks);
      const context = await tasks.store.resumeContext(taskId);
      expect(context).toMatchObject({ toolName: 'test-tool', arguments: { n: 1 } });
    });
  });

  it('createTask answers with the task as the store created it, without reading it back', async () => {
    const store = backend.store();
    const sessions = backend.sessions();
    opened.push(store, sessions);
    let reads = 0;
    const counted = new Proxy(store, {
      get(target, key) {
        const value: unknown = Reflect.get(target, key);
        return typeof value === 'function'
          ? (...args: unknown[]) => {
              if (key === 'getTask') reads += 1;
              return (value as (...args: unknown[]) => unknown).apply(target, args);
            }
          : value;
      },
    });
    const tasks = new SdkTaskStore(counted, { sessions });
    const task = await create(tasks, { ttl: 60000 }, sessionA);
    expect(reads, 'reads of the task while creating it').toBe(0);
    expect(await tasks.getTask(task.taskId, sessionA)).toStrictEqual(task);
  });

  describe('getTask', () => {
    it('returns null for a task that does not exist', async () => {
      expect(await open().getTask('non-existent')).toBeNull();
    });

    it('returns the task state', async () => {
      const tasks = open();
      const { taskId } = await create(tasks);
      await tasks.updateTaskStatus(taskId, 'working');
      expect((await tasks.getTask(taskId))?.status).toBe('working');
    });
  });

  describe('updateTaskStatus', () => {
    it.each(['input_required', 'completed', 'cancelled'] as const)('moves a working task to %s', async (status) => {
      const tasks = open();
      const { taskId } = await create(tasks);
      await tasks.updateTaskStatus(taskId, status);
      expect((await tasks.getTask(taskId))?.status).toBe(status);
    });

    it('fails a task with the message given (prefixed as the contract words failures)', async () => {
      const tasks = open();
      const { taskId } = await create(tasks);
      await tasks.updateTaskStatus(taskId, 'failed', 'Something went wrong');
      const task = await tasks.getTask(taskId);
      expect(task?.status).toBe('failed');
      expect(task?.statusMessage).toBe('Task failed: Something went wrong');
    });

    it('throws for a task that does not exist', async () => {
      await expect(open().updateTaskStatus('non-existent', 'working')).rejects.toThrow('Task with ID non-existent not found');
    });

    it.each(['working', 'completed', 'failed', 'cancelled'] as const)('moves an input_required task to %s', async (status) => {
      const tasks = open();
      const { taskId } = await create(tasks);
      await tasks.updateTaskStatus(taskId, 'input_required');
      await tasks.updateTaskStatus(taskId, status);
      expect((await tasks.getTask(taskId))?.status).toBe(status);
    });

    it.each(['completed', 'failed', 'cancelled'] as const)('refuses every transition out of %s', async (terminal) => {
      const tasks = open();
      const { taskId } = await create(tasks);
      await tasks.updateTaskStatus(taskId, terminal);
      for (const status of ['working', 'input_required', 'completed', 'failed', 'cancelled'] as const) {
        if (status === terminal) continue;
        await expect(tasks.updateTaskStatus(taskId, status)).rejects.toThrow('Cannot update task');
      }
      expect((await tasks.getTask(taskId))?.status).toBe(terminal);
    });

    it('cancelling raises the task token, which the tool holds', async () => {
      const tasks = open();
      const { taskId } = await create(tasks);
      const token = tasks.cancellationToken(taskId)!;
      await tasks.updateTaskStatus(taskId, 'cancelled', 'Client cancelled task execution.');
      await raised(token, 'the token after cancellation');
      expect((await tasks.getTask(taskId))?.statusMessage).toBe('Cancelled: Client cancelled task execution.');
    });
  });

  describe('storeTaskResult', () => {
    it('stores a result and completes the task', async () => {
      const tasks = open();
      const { taskId } = await create(tasks, { ttl: 60000 });
      await tasks.storeTaskResult(taskId, 'completed', text('Success!'));
      expect((await tasks.getTask(taskId))?.status).toBe('completed');
      expect(await tasks.getTaskResult(taskId)).toEqual(text('Success!'));
    });

    it('throws for a task that does not exist', async () => {
      await expect(open().storeTaskResult('non-existent', 'completed', {})).rejects.toThrow('Task with ID non-existent not found');
    });

    it('refuses a second result for a completed task', async () => {
      const tasks = open();
      const { taskId } = await create(tasks);
      await tasks.storeTaskResult(taskId, 'completed', text('First result'));
      await expect(tasks.storeTaskResult(taskId, 'completed', text('Second result'))).rejects.toThrow('Cannot store result for task');
      expect(await tasks.getTaskResult(taskId)).toEqual(text('First result'));
    });

    it('stores a result with the failed status, retrievable as it was given', async () => {
      const tasks = open();
      const { taskId } = await create(tasks);
      const result = { ...text('Error details'), isError: true };
      await tasks.storeTaskResult(taskId, 'failed', result);
      expect((await tasks.getTask(taskId))?.status).toBe('failed');
      expect(await tasks.getTaskResult(taskId)).toEqual(result);
    });

    it('refuses a second result for a failed task', async () => {
      const tasks = open();
      const { taskId } = await create(tasks);
      await tasks.storeTaskResult(taskId, 'failed', { ...text('First error'), isError: true });
      await expect(tasks.storeTaskResult(taskId, 'failed', { ...text('Second error'), isError: true })).rejects.toThrow(
        'Cannot store result for task',
      );
    });

    it('refuses a result for a cancelled task', async () => {
      const tasks = open();
      const { taskId } = await create(tasks);
      await tasks.updateTaskStatus(taskId, 'cancelled');
      await expect(tasks.storeTaskResult(taskId, 'completed', text('Cancellation result'))).rejects.toThrow('Cannot store result for task');
    });

    it('stores a result for an input_required task', async () => {
      const tasks = open();
      const { taskId } = await create(tasks);
      await tasks.updateTaskStatus(taskId, 'input_required');
      await tasks.storeTaskResult(taskId, 'completed', text('Success!'));
      expect((await tasks.getTask(taskId))?.status).toBe('completed');
    });
  });

  describe('getTaskResult', () => {
    it('throws for a task that does not exist', async () => {
      await expect(open().getTaskResult('non-existent')).rejects.toThrow('Task with ID non-existent not found');
    });

    it('throws for a task without a result yet', async () => {
      const tasks = open();
      const { taskId } = await create(tasks);
      await expect(tasks.getTaskResult(taskId)).rejects.toThrow(`Task ${taskId} has no result stored`);
    });

    it('returns the stored result', async () => {
      const tasks = open();
      const { taskId } = await create(tasks);
      await tasks.storeTaskResult(taskId, 'completed', text('Result data'));
      expect(await tasks.getTaskResult(taskId)).toEqual(text('Result data'));
    });

    it("a failure recorded without a result answers with the task's JSON-RPC error", async () => {
      const tasks = open();
      const { taskId } = await create(tasks);
      await tasks.store.failTask(taskId, { code: -32042, message: 'needs a URL', data: { url: 'https://example.com' } });
      const error = await tasks.getTaskResult(taskId).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(McpError);
      expect(error).toMatchObject({ code: -32042, data: { url: 'https://example.com' } });
    });
  });

  describe('listTasks (counterparts of listTasks and getAllTasks)', () => {
    it('lists nothing, and no cursor, for a session without tasks', async () => {
      expect(await open().listTasks(undefined, sessionA)).toEqual({ tasks: [] });
    });

    it('lists every task of the session while they fit in a page', async () => {
      const tasks = open();
      const ids = [];
      for (let i = 0; i < 3; i++) ids.push((await create(tasks, {}, sessionA)).taskId);
      const page = await tasks.listTasks(undefined, sessionA);
      expect(idsOf(page)).toEqual(sorted(ids));
      expect(page.nextCursor).toBeUndefined();
    });

    it('pages ten at a time', async () => {
      const tasks = open();
      for (let i = 0; i < 15; i++) await create(tasks, {}, sessionA);
      const first = await tasks.listTasks(undefined, sessionA);
      expect(first.tasks).toHaveLength(10);
      expect(first.nextCursor).toBeDefined();
      const second = await tasks.listTasks(first.nextCursor, sessionA);
      expect(second.tasks).toHaveLength(5);
      expect(second.nextCursor).toBeUndefined();
    });

    it('throws for a cursor it did not issue', async () => {
      const tasks = open();
      await create(tasks, {}, sessionA);
      await expect(tasks.listTasks('non-existent-cursor', sessionA)).rejects.toThrow('Invalid cursor: non-existent-cursor');
      await as(alice, () => expect(tasks.listTasks('non-existent-cursor')).rejects.toThrow('Invalid cursor: non-existent-cursor'));
    });

    it('continues after the cursor', async () => {
      const tasks = open({ pageSize: 3 });
      const ids = [];
      for (let i = 0; i < 5; i++) ids.push((await create(tasks, {}, sessionA)).taskId);
      const first = await tasks.listTasks(undefined, sessionA);
      expect(first.tasks).toHaveLength(3);
      const rest = await tasks.listTasks(first.nextCursor, sessionA);
      expect(rest.nextCursor).toBeUndefined();
      expect(sorted([...idsOf(first), ...idsOf(rest)])).toEqual(sorted(ids));
    });

    it('leaves out tasks that were discarded (the counterpart of cleanup)', async () => {
      const tasks = open();
      const kept = await create(tasks, {}, sessionA);
      const gone = await create(tasks, {}, sessionA);
      expect(await tasks.store.discardTask(gone.taskId)).toBe(true);
      expect(idsOf(await tasks.listTasks(undefined, sessionA))).toEqual([kept.taskId]);
    });
  });

  describe('ownership and scoping', () => {
    it("a task belongs to its creator's principal; anyone else reads it as missing", async () => {
      const tasks = open();
      const { taskId } = await create(tasks, {}, 's1', alice);
      expect((await tasks.store.taskOwner(taskId))?.owner).toBe(alice.extra!.sub);
      expect(await as(alice, () => tasks.getTask(taskId))).toMatchObject({ taskId });
      expect(await as(bob, () => tasks.getTask(taskId))).toBeNull();
      expect(await as(undefined, () => tasks.getTask(taskId))).toBeNull();
      await expect(as(bob, () => tasks.getTaskResult(taskId))).rejects.toThrow(`Task with ID ${taskId} not found`);
      await expect(as(bob, () => tasks.updateTaskStatus(taskId, 'cancelled'))).rejects.toThrow(`Task with ID ${taskId} not found`);
      await expect(as(bob, () => tasks.storeTaskResult(taskId, 'completed', text('x')))).rejects.toThrow(`Task with ID ${taskId} not found`);
      expect((await tasks.store.getTask(taskId))?.status).toBe('working');
    });

    it('an unowned task is not readable by an authenticated caller', async () => {
      const tasks = open();
      const { taskId } = await create(tasks, {}, 's1');
      expect(await as(undefined, () => tasks.getTask(taskId))).toMatchObject({ taskId });
      expect(await as(alice, () => tasks.getTask(taskId))).toBeNull();
    });

    it('the principal hook names principals its own way', async () => {
      const tasks = open({ principal: (authInfo) => `tenant:${authInfo.clientId}` });
      const { taskId } = await create(tasks, {}, 's1', alice);
      expect((await tasks.store.taskOwner(taskId))?.owner).toBe('tenant:app');
    });

    it("an authenticated caller lists its principal's tasks from any session, nobody else's", async () => {
      const tasks = open();
      const mine = [(await create(tasks, {}, 's1', alice)).taskId, (await create(tasks, {}, 's2', alice)).taskId];
      await create(tasks, {}, 's1', bob);
      await create(tasks, {}, 's1');
      const listed = await as(alice, () => tasks.listTasks(undefined, 's3'));
      expect(idsOf(listed)).toEqual(sorted(mine));
    });

    it('an unauthenticated caller lists its own session only, and nothing without a session', async () => {
      const tasks = open();
      const a = (await create(tasks, {}, sessionA)).taskId;
      await create(tasks, {}, sessionB);
      await create(tasks, {}, sessionA, alice);
      expect(idsOf(await tasks.listTasks(undefined, sessionA))).toEqual([a]);
      expect(await tasks.listTasks(undefined, undefined)).toEqual({ tasks: [] });
    });

    it('refuses to create a task outside a request of an attached server', async () => {
      await expect(open().createTask({}, 1, callRequest, 's1')).rejects.toThrow('call attach(server) before connect');
    });

    it("reads a task's owner once per instance, not on every call", async () => {
      const store = backend.store();
      opened.push(store);
      let ownerReads = 0;
      const counting = new Proxy(store, {
        get(target, property, receiver) {
          if (property === 'taskOwner') ownerReads++;
          const value = Reflect.get(target, property, receiver);
          return typeof value === 'function' ? value.bind(target) : value;
        },
      });
      const { taskId } = await create(new SdkTaskStore(counting), {}, 's1');
      const other = new SdkTaskStore(counting); // another instance, seeing the task for the first time
      for (let i = 0; i < 4; i++) await other.getTask(taskId);
      expect(ownerReads).toBe(1);
    });
  });

  describe('ttl and poll interval', () => {
    it('refuses a ttl that is not positive', async () => {
      const tasks = open();
      for (const ttl of [0, -5, Number.NaN]) {
        await expect(create(tasks, { ttl })).rejects.toSatisfy((e: unknown) => e instanceof McpError && e.code === ErrorCode.InvalidParams);
      }
    });

    it('rounds a fractional ttl up, and lowers one above maxTtlMs', async () => {
      expect((await create(open(), { ttl: 1500.2 })).ttl).toBe(1501);
      const capped = open({ maxTtlMs: 10_000 });
      expect((await create(capped, { ttl: 60_000 })).ttl).toBe(10_000);
      expect((await create(capped, { ttl: null })).ttl).toBe(10_000);
      expect((await create(open(), { ttl: null })).ttl).toBeNull();
    });

    it('gives tasks a poll interval of 1000 ms unless one is asked for', async () => {
      expect((await create(open())).pollInterval).toBe(1000);
      expect((await create(open(), { pollInterval: 250 })).pollInterval).toBe(250);
    });
  });

  it('reports store failures as McpErrors with the kind, keeping the store message', async () => {
    const tasks = open();
    const error = await as(undefined, () => tasks.createTask({}, 1, { method: 'tools/call', params: { name: '' } }, 's1')).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(McpError);
    expect(error).toMatchObject({ code: ErrorCode.InvalidParams, data: { kind: 'invalid_input' } });
  });
});

describe('SdkTaskStore on PostgresTaskStore only', () => {
  it('completing does not move the deadline: TTL runs from creation', async () => {
    const store = new PostgresTaskStore({ pool, schema: SCHEMA, reaper: false });
    opened.push(store);
    const tasks = new SdkTaskStore(store);
    const { taskId } = await withTaskRequestContext({}, () => tasks.createTask({ ttl: 60_000 }, 1, callRequest));
    const deadline = async () =>
      (await pool.query(`SELECT expires_at - created_at AS ttl, expires_at FROM ${SCHEMA}.tasks WHERE task_id = $1`, [taskId])).rows[0];
    const before = await deadline();
    await tasks.storeTaskResult(taskId, 'completed', text('done') as Result);
    expect(await deadline()).toEqual(before);
  });

  it('a database failure is a -32603 McpError without credentials', async () => {
    const store = new PostgresTaskStore({ connectionString: 'postgres://someone:s3cret-pw@127.0.0.1:1/nowhere', reaper: false, listen: false });
    opened.push(store);
    const error = await new SdkTaskStore(store).getTask('0'.repeat(32)).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: ErrorCode.InternalError, data: { kind: 'backend' } });
    expect(String((error as Error).message)).not.toContain('s3cret-pw');
  });

  it('an abandoned wait never surfaces as an unhandled rejection', async () => {
    const store = new PostgresTaskStore({ pool, schema: SCHEMA, reaper: false });
    opened.push(store);
    const { taskId } = await store.createTask({ toolName: 'wait' });
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      for (let i = 0; i < 20; i++) {
        const controller = new AbortController();
        const waiting = store.waitForCompletion(taskId, { signal: controller.signal });
        controller.abort(); // while its first round trip is still in flight
        await expect(waiting).rejects.toBe(controller.signal.reason);
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
    expect(unhandled).toEqual([]);
  });
});

describe('PostgresSessionTaskIndex', () => {
  it('keeps no row for a task that is gone, so nothing outlives its task', async () => {
    const store = new PostgresTaskStore({ pool, schema: SCHEMA, reaper: false });
    const index = new PostgresSessionTaskIndex({ pool, schema: SCHEMA });
    try {
      const { taskId, createdAt } = await store.createTask({ toolName: 'brief' }).then(async ({ taskId }) => (await store.getTask(taskId))!);
      expect(await store.discardTask(taskId)).toBe(true);
      await index.add(taskId, sessionA, createdAt);
      const { rows } = await pool.query(`SELECT count(*)::int AS n FROM ${SCHEMA}.task_sessions WHERE task_id = $1`, [taskId]);
      expect(rows[0].n).toBe(0);
      expect(await index.page(sessionA, undefined, 10)).toEqual({ taskIds: [] });
    } finally {
      await index.close();
      await store.close();
    }
  });
});
