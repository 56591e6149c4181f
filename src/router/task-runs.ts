/**
 * Running a tool handler as a task, on whichever instance starts or resumes it.
 *
 * A run ends in one of three ways, each recorded in the store: a result (`completeTask`, also for
 * `isError` results, which SEP-2663 keeps apart from failures), a thrown error (`failTask` with the
 * JSON-RPC error the synchronous call would have answered), or a request for input
 * (`requireInput`: the task parks in `input_required`, and the instance that receives the last
 * answer runs the handler again from the top). Nothing about a run lives in memory between rounds,
 * so any instance can resume any task.
 *
 * Cancellation reaches the handler through the store's token: `tasks/cancel` on any instance raises
 * it on the instance running the handler (in PostgreSQL through LISTEN/NOTIFY).
 *
 * On a store with execution leases, the instance running a round holds the task's lease for it
 * (src/contract/leases.ts): a round that parks the task gives it up, since nothing runs while the
 * task waits for input, and the instance that resumes it takes it again. If the instance dies
 * mid-round, the rescuer fails the task or, for a `resumable` tool, runs the handler again on an
 * instance that registered it.
 */
import { InputRequestsV2Schema } from '@modelcontextprotocol/ext-tasks/core/v2';
import { ProtocolError, isInputRequiredResult } from '@modelcontextprotocol/server';
import type { CancellationToken } from '../contract/cancellation.js';
import { TaskStoreError } from '../contract/errors.js';
import { offersLeases, type ResumeRequest } from '../contract/leases.js';
import type { CallToolResult, InputRequests, InputResponses, JsonRpcError, TaskOwner, TaskStore } from '../contract/types.js';
import { missingInputCapabilities } from './input-capabilities.js';
import type { RegisteredTool, ResumedRun, ToolCallContext, ToolOutcome } from './tools.js';

export interface TaskRun {
  taskId: string;
  tool: RegisteredTool;
  args: Record<string, unknown>;
  inputResponses: InputResponses;
  token: CancellationToken;
  principal: TaskOwner;
  /** The client capabilities of the request that started this round: what the client can answer. */
  clientCapabilities: unknown;
  resumed?: ResumedRun;
}

export class TaskRunner {
  private readonly active = new Set<Promise<void>>();

  constructor(
    private readonly store: TaskStore,
    private readonly onError: (error: Error) => void,
  ) {}

  /** Starts a round in the background; `drain()` waits for every round still running. */
  start(run: TaskRun): void {
    void this.track(run);
  }

  /**
   * Registers how this instance resumes a `resumable` tool's rescued tasks: the hook's run is one
   * round, started from the top with `context.resumed` set. Does nothing without leases.
   */
  resumeOnRescue(tool: RegisteredTool): void {
    if (!tool.resumable || !offersLeases(this.store)) return;
    this.store.leases.onResume(tool.name, (request) => this.rescued(tool, request));
  }

  private async rescued(tool: RegisteredTool, { taskId, context, previousAttempts, lostRunner, lastStatusMessage }: ResumeRequest): Promise<void> {
    const args = tool.parseArguments(context.arguments);
    if (!args.ok) throw new Error(`the task's arguments no longer match tool '${tool.name}': ${args.message}`);
    const owner = await this.store.taskOwner(taskId);
    if (owner === null) return;
    await this.track({
      taskId,
      tool,
      args: args.args,
      inputResponses: context.inputResponses,
      token: context.token,
      principal: owner.owner,
      // Nobody is asking: no client can answer input this round asks for.
      clientCapabilities: {},
      resumed: { previousAttempts, lostRunner, lastProgress: lastStatusMessage },
    });
  }

  private track(run: TaskRun): Promise<void> {
    const round = this.runRound(run).catch((error: unknown) => this.onError(asError(error)));
    this.active.add(round);
    void round.finally(() => this.active.delete(round));
    return round;
  }

  /** Resumes a task whose last outstanding request was just answered. */
  async resume(taskId: string, tool: (name: string) => RegisteredTool | undefined, principal: TaskOwner, clientCapabilities: unknown): Promise<void> {
    const context = await this.store.resumeContext(taskId);
    if (context === null) return; // expired or removed since: nothing left to run
    const registered = tool(context.toolName);
    if (registered === undefined) {
      await this.store.failTask(taskId, { code: -32603, message: `tool '${context.toolName}' is not registered here, so the task cannot resume` });
      return;
    }
    const args = registered.parseArguments(context.arguments);
    if (!args.ok) {
      await this.store.failTask(taskId, { code: -32602, message: `the task's arguments no longer match tool '${context.toolName}': ${args.message}` });
      return;
    }
    // The task left input_required on this instance: this one runs it now, under its lease.
    if (offersLeases(this.store) && !(await this.store.leases.acquireLease(taskId))) return;
    this.start({
      taskId,
      tool: registered,
      args: args.args,
      inputResponses: context.inputResponses,
      token: context.token,
      principal,
      clientCapabilities,
    });
  }

  async drain(): Promise<void> {
    while (this.active.size > 0) await Promise.allSettled([...this.active]);
  }

  private async runRound(run: TaskRun): Promise<void> {
    if (run.token.isCancelled) return; // cancelled or expired before it started: already settled
    const context: ToolCallContext = {
      taskId: run.taskId,
      signal: run.token.signal,
      inputResponses: run.inputResponses,
      principal: run.principal,
      reportProgress: async (message) => {
        await this.store.setStatus(run.taskId, 'working', message);
      },
      resumed: run.resumed ?? null,
    };
    let outcome: ToolOutcome;
    try {
      outcome = await run.tool.handler(run.args, context);
    } catch (error) {
      await this.store.failTask(run.taskId, toJsonRpcError(error));
      return;
    }
    if (isInputRequiredResult(outcome)) {
      await this.park(run, outcome.inputRequests);
      if (offersLeases(this.store)) await this.store.leases.releaseLease(run.taskId);
      return;
    }
    await this.complete(run.taskId, outcome);
  }

  private async complete(taskId: string, result: CallToolResult): Promise<void> {
    const { content, isError, structuredContent, _meta } = result as CallToolResult & { resultType?: unknown };
    const stored: CallToolResult = {
      content: content ?? [],
      ...(isError !== undefined && { isError }),
      ...(structuredContent !== undefined && { structuredContent }),
      ...(_meta !== undefined && { _meta }),
    };
    try {
      await this.store.completeTask(taskId, stored);
    } catch (error) {
      // A result the store refuses must still end the task rather than leave it working.
      if (!(error instanceof TaskStoreError) || error.kind !== 'invalid_input') throw error;
      await this.store.failTask(taskId, { code: -32603, message: `the tool returned an invalid result: ${error.message}` });
    }
  }

  /** Parks the task on the input the handler asked for, or fails it when that cannot work. */
  private async park(run: TaskRun, requested: unknown): Promise<void> {
    const parsed = InputRequestsV2Schema.safeParse(requested ?? {});
    if (!parsed.success || Object.keys(parsed.data).length === 0) {
      await this.store.failTask(run.taskId, {
        code: -32603,
        message: parsed.success
          ? 'the tool asked for input without naming any request, so the task would wait forever'
          : `the tool asked for input with invalid requests: ${parsed.error.message}`,
      });
      return;
    }
    const requests = parsed.data as InputRequests;
    const missing = missingInputCapabilities(requests, run.clientCapabilities);
    if (missing !== undefined) {
      await this.store.failTask(run.taskId, {
        code: -32021,
        message: 'the tool asked for input the client did not declare it can provide',
        data: { requiredCapabilities: missing },
      });
      return;
    }
    try {
      await this.store.requireInput(run.taskId, requests);
    } catch (error) {
      // A spent key reused by the handler: a bug in the tool, reported on the task.
      if (!(error instanceof TaskStoreError) || error.kind === 'backend') throw error;
      await this.store.failTask(run.taskId, { code: -32603, message: error.message });
    }
  }
}

/** The JSON-RPC error a thrown error stands for, as the synchronous call would have answered. */
export function toJsonRpcError(error: unknown): JsonRpcError {
  if (error instanceof ProtocolError) {
    return { code: error.code, message: error.message, ...(error.data !== undefined && { data: error.data }) };
  }
  return { code: -32603, message: error instanceof Error ? error.message : String(error) };
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}
