// The public API. Every export here is public: add named exports only, never wildcards.
export {
  type TaskStatus,
  type TaskOwner,
  type TaskObject,
  type CallToolResult,
  type JsonRpcError,
  type InputRequest,
  type InputRequests,
  type InputResponses,
  type TaskSnapshot,
  type TaskPresence,
  type AppliedInputResponses,
  type TaskResumeContext,
  type CreateTaskInput,
  type ListTasksOptions,
  type TaskPage,
  type TaskStore,
  type RetentionLimits,
  isTerminal,
  ownerMatches,
} from './contract/types.js';
export { CancellationToken } from './contract/cancellation.js';
export { TaskStoreError, type TaskStoreErrorKind } from './contract/errors.js';
export { generateTaskId } from './contract/ids.js';
export type { ReapResult } from './contract/types.js';
export {
  offersLeases,
  lostRunnerError,
  DEFAULT_HEARTBEAT_MS,
  DEFAULT_LEASE_MS,
  type LeaseOptions,
  type LeasedTask,
  type LeaseState,
  type LeasingTaskStore,
  type LostRunnerPolicy,
  type RescueResult,
  type ResumeHook,
  type ResumeRequest,
  type TaskLeases,
} from './contract/leases.js';
export {
  MemoryTaskStore,
  DEFAULT_TOMBSTONE_RETENTION_MS,
  DEFAULT_MAX_TASKS,
  DEFAULT_MAX_RETAINED_BYTES,
  type MemoryTaskStoreOptions,
} from './memory/index.js';
export {
  PostgresTaskStore,
  migrate,
  type PostgresTaskStoreOptions,
  type MigrateOptions,
  type ListenerState,
  type ListenerStateChange,
  type ReaperOptions,
  type ReaperPass,
  type Logger,
} from './postgres/index.js';
