/**
 * hasTaskChangeFeed: how a router decides between watching tasks and waiting on each one. A store
 * is taken at its word only when it has a `watchTasks` method.
 */
import { describe, expect, it } from 'vitest';
import { hasTaskChangeFeed } from '../../src/contract/task-changes.js';
import { MemoryTaskStore } from '../../src/memory/memory-task-store.js';
import type { TaskStore } from '../../src/index.js';

describe('hasTaskChangeFeed', () => {
  it('is true for a store with a watchTasks method, and false without one', async () => {
    const memory = new MemoryTaskStore();
    try {
      expect(hasTaskChangeFeed(memory)).toBe(true);
      // Only the TaskStore methods a router uses here; nothing named watchTasks, or not a method.
      const plain = { waitForCompletion: memory.waitForCompletion.bind(memory) } as unknown as TaskStore;
      expect(hasTaskChangeFeed(plain)).toBe(false);
      expect(hasTaskChangeFeed({ ...plain, watchTasks: 'soon' } as unknown as TaskStore)).toBe(false);
    } finally {
      await memory.close();
    }
  });
});
