// The memory store's public surface (the `./memory` subpath export): named exports only.
export { MemoryTaskStore, DEFAULT_TOMBSTONE_RETENTION_MS, type MemoryTaskStoreOptions } from './memory-task-store.js';
export { DEFAULT_MAX_TASKS, DEFAULT_MAX_RETAINED_BYTES } from './retention.js';
