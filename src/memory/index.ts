// The memory store's public surface, for src/index.ts to re-export by name.
export {
  MemoryTaskStore,
  DEFAULT_TOMBSTONE_RETENTION_MS,
  type MemoryTaskStoreOptions,
  type ReapResult,
} from './memory-task-store.js';
export { DEFAULT_MAX_TASKS, DEFAULT_MAX_RETAINED_BYTES } from './retention-limits.js';
