// The `sdk` export: this package's stores inside `@modelcontextprotocol/sdk` 1.x (protocol
// 2025-11-25). Every export here is public: add named exports only, never wildcards.
export { SdkTaskStore, type SdkTaskStoreOptions, type CreatedTask } from './sdk-task-store.js';
export { PostgresTaskMessageQueue, type PostgresTaskMessageQueueOptions } from './postgres-message-queue.js';
export {
  MemorySessionTaskIndex,
  PostgresSessionTaskIndex,
  type SessionTaskIndex,
  type SessionTaskPage,
} from './session-index.js';
export type { PostgresConnectionOptions } from './postgres-connection.js';
export { taskTool, type TaskToolContext, type TaskToolOptions, type TaskToolRun } from './tool-task.js';
export {
  withTaskRequestContext,
  currentTaskRequest,
  defaultPrincipal,
  type TaskRequestContext,
  type PrincipalOf,
} from './request-context.js';
export { ERROR_CODES, toMcpError } from './errors.js';
export type { WakingTaskMessageQueue } from './server-binding.js';
