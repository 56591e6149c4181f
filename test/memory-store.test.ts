import { describe, expect, it } from 'vitest';
import { MemoryTaskStore } from '../src/memory/memory-task-store.js';
import { TaskStoreError } from '../src/index.js';
import { runTaskStoreConformance } from './conformance/task-store-conformance.js';

runTaskStoreConformance({
  name: 'MemoryTaskStore',
  capabilities: { maxTasks: true, maxRetainedBytes: true },
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
