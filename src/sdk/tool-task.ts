/**
 * Writing a task-supporting tool for SDK 1.x without the bookkeeping: `taskTool(tasks, run)` is a
 * `ToolTaskHandler` for `server.experimental.tasks.registerToolTask`. It creates the task, runs
 * `run` in the background with the task's cancellation signal, and stores what `run` returns:
 *
 * - a result: `completed` (`failed` when it carries `isError: true`, as SDK 1.x clients expect);
 * - a thrown error with an integer `code` (an `McpError`, say): `failed` with that JSON-RPC error,
 *   which tasks/result then answers with;
 * - any other thrown error: `failed`, with an `isError` result holding its message;
 * - nothing at all once the task was cancelled or expired: the signal said to stop.
 *
 * `context.elicit` asks the client through the SDK (the request travels on the client's
 * tasks/result stream) and also records the question and the answer in the store
 * (`requireInput` / `applyInputResponses`), so they are visible in SQL and to other instances.
 *
 * On a store with execution leases the task is leased to this instance while `run` runs. With
 * `resumable: { toolName }`, a task of that tool whose instance died is run again, on an instance
 * that registered the same tool, with `context.resumed` set and no request behind it (`extra` is
 * absent and `elicit` refuses); its outcome is stored as any run's.
 */
import type { CreateTaskRequestHandlerExtra, ToolTaskHandler } from '@modelcontextprotocol/sdk/experimental/tasks/interfaces.js';
import type { ShapeOutput, ZodRawShapeCompat } from '@modelcontextprotocol/sdk/server/zod-compat.js';
import {
  ElicitResultSchema,
  type CallToolResult,
  type ElicitRequestFormParams,
  type ElicitResult,
  type Result,
} from '@modelcontextprotocol/sdk/types.js';
import type { CancellationToken } from '../contract/cancellation.js';
import { offersLeases, type ResumeRequest } from '../contract/leases.js';
import { isTerminal, type InputRequests, type JsonRpcError } from '../contract/types.js';
import { failureOf } from './task-mapping.js';
import { currentTaskRequest } from './request-context.js';
import type { SdkTaskStore } from './sdk-task-store.js';

export interface TaskToolContext {
  taskId: string;
  /** Aborted when the task is cancelled (tasks/cancel on any instance) or expires. */
  signal: AbortSignal;
  token: CancellationToken;
  /** Progress for tasks/get: the task stays `working`, with this status message. */
  reportStatus(message: string): Promise<void>;
  /**
   * Asks the client one or more questions at once (`elicitation/create`), keyed by names of the
   * tool's choosing (a key is spent once answered), and resolves with every answer. The task is
   * `input_required` until the last one arrives. Rejects if the task is cancelled meanwhile.
   */
  elicit(requests: Record<string, ElicitRequestFormParams>): Promise<Record<string, ElicitResult>>;
  /** The SDK's handler extra of the tools/call that created the task; absent in a resumed run. */
  extra?: CreateTaskRequestHandlerExtra;
  /** Set when this run resumes a task whose instance died: pick up from `lastProgress`. */
  resumed: { previousAttempts: number; lostRunner: string | null; lastProgress: string | null } | null;
}

export type TaskToolRun<Shape extends ZodRawShapeCompat> = (
  args: ShapeOutput<Shape>,
  context: TaskToolContext,
) => Promise<CallToolResult>;

export interface TaskToolOptions {
  /** `pollInterval` the task advertises, in ms. Default: the store's default. */
  pollIntervalMs?: number;
  /** Where failures to record an outcome go (the database down, say). Default: console.error. */
  onError?: (error: unknown, taskId: string) => void;
  /**
   * Run a task of this tool again when the instance running it dies, instead of failing it. Name
   * the tool as registered; every instance that registers it may resume its tasks.
   */
  resumable?: { toolName: string };
}

/** The longest delay a Node.js timer accepts. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export function taskTool<Shape extends ZodRawShapeCompat>(
  tasks: SdkTaskStore,
  run: TaskToolRun<Shape>,
  options: TaskToolOptions = {},
): ToolTaskHandler<Shape> {
  const onError = options.onError ?? ((error, taskId) => console.error(`task ${taskId}: could not record its outcome:`, error));
  const handler = {
    createTask: async (args: ShapeOutput<Shape>, extra: CreateTaskRequestHandlerExtra) => {
      const task = await extra.taskStore.createTask({
        ...(extra.taskRequestedTtl !== undefined ? { ttl: extra.taskRequestedTtl } : {}),
        ...(options.pollIntervalMs !== undefined ? { pollInterval: options.pollIntervalMs } : {}),
      });
      const created = tasks.createdTask(task.taskId);
      if (!created) throw new Error(`task ${task.taskId} was not created through this SdkTaskStore`);
      const { token, taskAugmented } = created;
      const taskId = task.taskId;
      const deadline = task.ttl === null ? null : Date.parse(task.createdAt) + task.ttl;
      const context: TaskToolContext = {
        taskId,
        signal: token.signal,
        token,
        extra,
        reportStatus: (message) => extra.taskStore.updateTaskStatus(taskId, 'working', message),
        elicit: (requests) => elicit(tasks, extra, { taskId, token, taskAugmented, deadline }, requests),
        resumed: null,
      };
      const store = { storeTaskResult: extra.taskStore.storeTaskResult.bind(extra.taskStore) };
      void settle(tasks, store, context, () => run(args, context)).catch((error) => onError(error, taskId));
      return { task };
    },
    getTask: async (_args: unknown, extra: { taskId: string; taskStore: CreateTaskRequestHandlerExtra['taskStore'] }) =>
      extra.taskStore.getTask(extra.taskId),
    getTaskResult: async (_args: unknown, extra: { taskId: string; taskStore: CreateTaskRequestHandlerExtra['taskStore'] }) =>
      (await extra.taskStore.getTaskResult(extra.taskId)) as CallToolResult,
  };
  if (options.resumable && offersLeases(tasks.store)) {
    tasks.store.leases.onResume(options.resumable.toolName, (request) => resume(tasks, run, request));
  }
  return handler as unknown as ToolTaskHandler<Shape>;
}

/** A rescued task's run: no request, so its outcome goes to the store directly. */
async function resume<Shape extends ZodRawShapeCompat>(tasks: SdkTaskStore, run: TaskToolRun<Shape>, request: ResumeRequest): Promise<void> {
  const { taskId, context: resumeContext } = request;
  const context: TaskToolContext = {
    taskId,
    signal: resumeContext.token.signal,
    token: resumeContext.token,
    reportStatus: async (message) => {
      await tasks.store.setStatus(taskId, 'working', message);
    },
    elicit: async () => {
      throw new Error(`task ${taskId} resumed without a client to ask: a resumed run cannot elicit`);
    },
    resumed: { previousAttempts: request.previousAttempts, lostRunner: request.lostRunner, lastProgress: request.lastStatusMessage },
  };
  const store = {
    storeTaskResult: async (id: string, status: 'completed' | 'failed', result: Result) => {
      if (status === 'completed') await tasks.store.completeTask(id, result as never);
      else await tasks.store.failTask(id, failureOf(result));
    },
  };
  await settle(tasks, store, context, () => run(resumeContext.arguments as ShapeOutput<Shape>, context));
}

/** Where a run's outcome is stored: the SDK's request-bound task store, or the store itself. */
type OutcomeStore = { storeTaskResult(taskId: string, status: 'completed' | 'failed', result: Result): Promise<void> };

async function settle(
  tasks: SdkTaskStore,
  outcomes: OutcomeStore,
  context: TaskToolContext,
  run: () => Promise<CallToolResult>,
): Promise<void> {
  let outcome: { result: CallToolResult } | { error: unknown };
  try {
    outcome = { result: await run() };
  } catch (error) {
    outcome = { error };
  }
  if (tasks.isClosed) return;
  try {
    await record(tasks, outcomes, context, outcome);
  } catch (error) {
    // Cancelled, expired or settled meanwhile: there is no outcome left to record.
    const task = await tasks.store.getTask(context.taskId);
    if (task && !isTerminal(task.status)) throw error;
  }
}

async function record(
  tasks: SdkTaskStore,
  outcomes: OutcomeStore,
  context: TaskToolContext,
  outcome: { result: CallToolResult } | { error: unknown },
): Promise<void> {
  if (context.token.isCancelled) return;
  if ('result' in outcome) {
    const { result } = outcome;
    await outcomes.storeTaskResult(context.taskId, result.isError ? 'failed' : 'completed', result as Result);
    return;
  }
  const error = outcome.error as { code?: unknown; message?: unknown; data?: unknown } | null;
  const message = error instanceof Error ? error.message : String(error);
  if (error && Number.isSafeInteger(error.code)) {
    const rpcError: JsonRpcError = { code: error.code as number, message, ...(error.data !== undefined ? { data: error.data } : {}) };
    if (await tasks.store.failTask(context.taskId, rpcError)) await notifyStatus(tasks, context.taskId);
    return;
  }
  await outcomes.storeTaskResult(context.taskId, 'failed', {
    content: [{ type: 'text', text: message }],
    isError: true,
  });
}

/** `notifications/tasks/status`, as the SDK sends for the transitions it makes itself. */
async function notifyStatus(tasks: SdkTaskStore, taskId: string): Promise<void> {
  const server = currentTaskRequest()?.server;
  const task = await tasks.getTask(taskId);
  if (server && task) await server.notification({ method: 'notifications/tasks/status', params: task }).catch(() => {});
}

async function elicit(
  tasks: SdkTaskStore,
  extra: CreateTaskRequestHandlerExtra,
  task: { taskId: string; token: CancellationToken; taskAugmented: boolean; deadline: number | null },
  requests: Record<string, ElicitRequestFormParams>,
): Promise<Record<string, ElicitResult>> {
  const { taskId, token } = task;
  const asked: InputRequests = Object.fromEntries(
    Object.entries(requests).map(([key, params]) => [key, { method: 'elicitation/create' as const, params }]),
  );
  await tasks.store.requireInput(taskId, asked);
  // The client may take as long as the task lives to answer.
  const timeout = Math.max(1, Math.min(MAX_TIMER_MS, task.deadline === null ? MAX_TIMER_MS : task.deadline - Date.now()));
  const stopped = token.whenCancelled().then(() => {
    throw new Error(`task ${taskId} was ${String(token.signal.reason ?? 'cancelled')} while waiting for input`);
  });
  stopped.catch(() => {}); // observed by the races below; this keeps a late raise from going unhandled
  const answers = await Promise.all(
    Object.entries(requests).map(async ([key, params]) => {
      const answer = extra.sendRequest({ method: 'elicitation/create', params }, ElicitResultSchema, {
        // A task-augmented call's client reads requests from its tasks/result stream; a plain call
        // (the SDK polling a task on the client's behalf) gets them on the tools/call stream.
        ...(task.taskAugmented ? { relatedTask: { taskId } } : {}),
        timeout,
      });
      const result = (await Promise.race([answer, stopped])) as ElicitResult;
      await tasks.store.applyInputResponses(taskId, { [key]: result });
      return [key, result] as const;
    }),
  );
  return Object.fromEntries(answers);
}
