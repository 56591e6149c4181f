// The router's public surface (subpath export `./router`). Named exports only.
export { TaskRouter, DEFAULT_POLL_INTERVAL_MS, type TaskRouterOptions } from './task-router.js';
export { createTaskHttpHandler, MODERN_PROTOCOL_VERSION, type TaskHttpHandler, type TaskHttpHandlerOptions } from './http.js';
export { defaultPrincipal, TASK_NOT_FOUND, TASK_EXPIRED, type PrincipalResolver } from './authorization.js';
export type {
  TaskSupport,
  ToolCallContext,
  ResumedRun,
  ToolHandler,
  ToolOptions,
  ToolOutcome,
  PrepareContext,
} from './tools.js';
