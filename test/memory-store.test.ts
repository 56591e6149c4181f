import { describe, expect, it, vi } from 'vitest';
import { MemoryTaskStore } from '../src/memory/memory-task-store.js';
import { TaskStoreError } from '../src/index.js';
import { runTaskStoreConformance } from './conformance/task-store-conformance.js';
import { eventually, sleep } from './support/time.js';

runTaskStoreConformance({
  name: 'MemoryTaskStore',
  capabilities: { maxTasks: true, maxRetainedBytes: true, changeFeed: true },
  createStore: async (options) => new MemoryTaskStore(options),
});

describe('MemoryTaskStore defaults', () => {
  it('holds at most 1024 tasks by default', async () => {
    const store = new MemoryTaskStore();
    try {
      for (let i = 0; i < 1024; i++) await store.createTask({ toolName: 'tool', owner: `owner-${i}` });
      const refused = await store.createTask({ toolName: 'tool' }).then(
        () => null,
        (error: unknown) => error,
      );
      expect(refused).toBeInstanceOf(TaskStoreError);
      expect((refused as TaskStoreError).kind).toBe('retention_limit_exceeded');
    } finally {
      await store.close();
    }
  });
});

describe('MemoryTaskStore on its own clock', () => {
  it('runs a cleanup pass every tombstoneRetentionMs by itself: an expired task is tombstoned, then purged', async () => {
    const store = new MemoryTaskStore({ tombstoneRetentionMs: 100 });
    try {
      const { taskId } = await store.createTask({ toolName: 'tool', ttlMs: 0, owner: 'alice' });
      expect(await store.taskPresence(taskId)).toStrictEqual({ state: 'expired', owner: 'alice' });
      await eventually('the automatic passes purging the tombstone', async () => (await store.taskPresence(taskId)).state === 'missing');
    } finally {
      await store.close();
    }
  });

  it('keeps a tombstone for tombstoneRetentionMs after the task expired, to the millisecond', async () => {
    vi.useFakeTimers({ now: 1_000_000 });
    const store = new MemoryTaskStore({ tombstoneRetentionMs: 100 });
    try {
      const { taskId } = await store.createTask({ toolName: 'tool', ttlMs: 50, owner: 'alice' });
      vi.advanceTimersByTime(50);
      expect(await store.reapExpired()).toStrictEqual({ tombstoned: 1, purged: 0 });
      vi.advanceTimersByTime(99);
      expect(await store.reapExpired()).toStrictEqual({ tombstoned: 0, purged: 0 });
      expect(await store.taskPresence(taskId)).toStrictEqual({ state: 'expired', owner: 'alice' });
      vi.advanceTimersByTime(1);
      expect(await store.reapExpired()).toStrictEqual({ tombstoned: 0, purged: 1 });
      expect(await store.taskPresence(taskId)).toStrictEqual({ state: 'missing' });
    } finally {
      await store.close();
      vi.useRealTimers();
    }
  });

  it('setTtl into the past raises the token and wakes waiters before it returns', async () => {
    const store = new MemoryTaskStore();
    try {
      const { taskId, token } = await store.createTask({ toolName: 'tool' });
      let woken: unknown = 'not yet';
      void store.waitForCompletion(taskId).then((outcome) => (woken = outcome));
      await sleep(5);
      await store.setTtl(taskId, 0);
      expect(token.isCancelled).toBe(true);
      expect(token.signal.reason).toBe('expired');
      await Promise.resolve();
      expect(woken).toBeNull();
    } finally {
      await store.close();
    }
  });
});

describe('MemoryTaskStore change feed', () => {
  it('reports a task once per call, however many of its fields the call changed', async () => {
    const store = new MemoryTaskStore();
    try {
      const { taskId } = await store.createTask({ toolName: 'tool' });
      await store.requireInput(taskId, { k: { method: 'roots/list' } });
      const reported: string[] = [];
      const watch = await store.watchTasks([taskId], (id) => reported.push(id));
      // A cancel request, the status, its message and the outstanding requests, in one call.
      await store.cancelTask(taskId, 'stop');
      await sleep(10);
      expect(reported).toEqual([taskId]);
      watch.close();
    } finally {
      await store.close();
    }
  });
});

describe('subpath exports', () => {
  it('./memory and ./postgres export the very objects the root exports', async () => {
    const root: Record<string, unknown> = await import('../src/index.js');
    for (const entry of ['../src/memory/index.js', '../src/postgres/index.js']) {
      const subpath: Record<string, unknown> = await import(entry);
      expect(Object.keys(subpath).length, entry).toBeGreaterThan(0);
      for (const [name, value] of Object.entries(subpath)) expect(root[name], `${entry} ${name}`).toBe(value);
    }
  });
});
