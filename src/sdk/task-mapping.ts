/** Translating between the SDK's task shapes and the contract's. */
import type { CallToolResult as SdkCallToolResult, Request, Result, Task } from '@modelcontextprotocol/sdk/types.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import type { CallToolResult, JsonRpcError, TaskObject } from '../contract/types.js';

/** The SDK's `Task`: `ttl` and `pollInterval` are the contract's `ttlMs` and `pollIntervalMs`. */
export function toSdkTask(task: TaskObject): Task {
  return {
    taskId: task.taskId,
    status: task.status,
    ttl: task.ttlMs,
    createdAt: task.createdAt,
    lastUpdatedAt: task.lastUpdatedAt,
    ...(task.pollIntervalMs !== undefined ? { pollInterval: task.pollIntervalMs } : {}),
    ...(task.statusMessage !== undefined ? { statusMessage: task.statusMessage } : {}),
  };
}

/** The tool name and arguments of the request a task was created for. */
export function describeCall(request: Request): { toolName: string; arguments: unknown } {
  const { name, arguments: args, task: _task, _meta, ...rest } = (request.params ?? {}) as Record<string, unknown>;
  if (request.method === 'tools/call' && typeof name === 'string') return { toolName: name, arguments: args ?? null };
  // Any other task-augmented request: named after its method, its params kept as the arguments.
  return { toolName: request.method, arguments: name === undefined ? rest : { name, ...rest } };
}

/**
 * A requested ttl as the store takes it: whole milliseconds, at least 1 (a task born expired is of
 * no use to anyone), at most `maxTtlMs`. `undefined` leaves the store's default; `null` (a server
 * asking for no expiry) is honoured unless a maximum is set.
 */
export function toTtlMs(ttl: number | null | undefined, maxTtlMs: number | undefined): number | null | undefined {
  if (ttl === undefined) return undefined;
  if (ttl === null) return maxTtlMs ?? null;
  if (!Number.isFinite(ttl) || ttl <= 0) {
    throw new McpError(ErrorCode.InvalidParams, `Invalid ttl ${ttl}: must be a positive number of milliseconds`);
  }
  return Math.min(Math.ceil(ttl), maxTtlMs ?? Number.POSITIVE_INFINITY); // the store refuses absurd ones
}

export function toPollIntervalMs(pollInterval: number | undefined): number | undefined {
  if (pollInterval === undefined) return undefined;
  if (!Number.isFinite(pollInterval) || pollInterval < 0) {
    throw new McpError(ErrorCode.InvalidParams, `Invalid pollInterval ${pollInterval}: must be a non-negative number`);
  }
  return Math.ceil(pollInterval);
}

/** Where a failed task's SDK result is kept inside its JSON-RPC error. */
const TOOL_RESULT_KEY = 'toolResult';
const MAX_DERIVED_MESSAGE_LENGTH = 500;

/**
 * A failed SDK result as the contract stores a failure: a JSON-RPC error (-32603) whose message is
 * the result's first text, keeping the whole result in `data.toolResult` for `tasks/result`.
 */
export function failureOf(result: Result): JsonRpcError {
  const content = (result as Partial<SdkCallToolResult>).content;
  const text = Array.isArray(content) ? content.find((block) => block.type === 'text')?.text : undefined;
  const message = (text ?? 'Tool call failed').slice(0, MAX_DERIVED_MESSAGE_LENGTH);
  return { code: ErrorCode.InternalError, message, data: { [TOOL_RESULT_KEY]: result } };
}

/** The SDK result a failure recorded by {@link failureOf} carries, if it is one. */
export function resultOfFailure(error: JsonRpcError): CallToolResult | undefined {
  const data = error.data as Record<string, unknown> | undefined;
  const result = data?.[TOOL_RESULT_KEY] as CallToolResult | undefined;
  return result && typeof result === 'object' && Array.isArray(result.content) ? result : undefined;
}
