import { describe, expect, it } from 'vitest';
import { MemoryTaskStore } from '../src/memory/memory-task-store.js';
import { TaskStoreError } from '../src/index.js';
import { runTaskStoreConformance } from './conformance/task-store-conformance.js';

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
