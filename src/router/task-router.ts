/**
 * The SEP-2663 tasks extension (`io.modelcontextprotocol/tasks`, protocol 2026-07-28) for a
 * low-level `Server` of `@modelcontextprotocol/server`, backed by any {@link TaskStore}.
 *
 * The router owns `tools/list` and `tools/call` (every tool, task-supporting or not, is registered
 * with it) and serves `tasks/get`, `tasks/update` and `tasks/cancel`. It is sessionless: a request
 * needs nothing from process memory, only the store, so any instance behind a load balancer
 * answers any task; the only in-process state is the work a handler is doing right now and the
 * notification streams open on this instance.
 */
import {
  CLIENT_CAPABILITIES_META_KEY,
  MissingRequiredClientCapabilityError,
  ProtocolError,
  ProtocolErrorCode,
  Server,
  isInputRequiredResult,
  type Implementation,
  type ServerContext,
} from '@modelcontextprotocol/server';
import {
  CreateMessageResultV2Schema,
  ElicitResultV2Schema,
  ListRootsResultV2Schema,
  TASKS_EXTENSION_ID_V2,
} from '@modelcontextprotocol/ext-tasks/core/v2';
import { z } from 'zod';
import { isTerminal, type InputRequests, type InputResponses, type TaskOwner, type TaskStore } from '../contract/types.js';
import { createTaskToRun } from '../contract/leases.js';
import {
  authorizeTask,
  declaresTasks,
  defaultPrincipal,
  missingTasksCapability,
  requireTasksCapability,
  vanishedTask,
  type PrincipalResolver,
} from './authorization.js';
import { missingInputCapabilities } from './input-capabilities.js';
import { TaskRunner } from './task-runs.js';
import { registeredTool, type RegisteredTool, type ToolHandler, type ToolOptions, type ToolCallContext } from './tools.js';
import { createTaskResult, renderTask } from './wire.js';

export interface TaskRouterOptions {
  store: TaskStore;
  /** The server's name and version, as `server/discover` reports them. */
  serverInfo?: Implementation;
  instructions?: string;
  /** Maps a request's authentication to the principal that owns its tasks. Default: {@link defaultPrincipal}. */
  principal?: PrincipalResolver;
  /** TTL of tasks whose tool sets none (ms from creation; null: never). Default: the store's. */
  ttlMs?: number | null;
  /** Polling interval suggested to clients, in ms. Default 1000. */
  pollIntervalMs?: number;
  /** Failures with nobody left to answer: a background round the store could not record. */
  onError?: (error: Error) => void;
}

export const DEFAULT_POLL_INTERVAL_MS = 1000;

const taskIdParams = z.looseObject({ taskId: z.string() });

/** Which schema an answer to each kind of input request must match. */
const RESPONSE_SCHEMAS: Record<string, z.ZodType> = {
  'elicitation/create': ElicitResultV2Schema,
  'sampling/createMessage': CreateMessageResultV2Schema,
  'roots/list': ListRootsResultV2Schema,
};

export class TaskRouter {
  readonly store: TaskStore;
  private readonly tools = new Map<string, RegisteredTool>();
  private readonly runner: TaskRunner;
  private readonly principalOf: PrincipalResolver;
  readonly serverInfo: Implementation;
  private readonly instructions: string | undefined;
  private readonly ttlMs: number | null | undefined;
  private readonly pollIntervalMs: number;
  readonly reportError: (error: Error) => void;

  constructor(options: TaskRouterOptions) {
    this.store = options.store;
    this.principalOf = options.principal ?? defaultPrincipal;
    this.serverInfo = options.serverInfo ?? { name: 'mcp-task-store-postgres', version: '0.1.0' };
    this.instructions = options.instructions;
    this.ttlMs = options.ttlMs;
    this.pollIntervalMs = options.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS;
    this.reportError = (error) => {
      try {
        options.onError?.(error);
      } catch {
        // Reporting must never break serving.
      }
    };
    this.runner = new TaskRunner(this.store, this.reportError);
  }

  /** Registers a tool. Names are unique; registering one twice throws. */
  tool<Schema extends z.ZodType<Record<string, unknown>>>(
    name: string,
    options: ToolOptions<Schema>,
    handler: ToolHandler<z.output<Schema>>,
  ): this {
    if (this.tools.has(name)) throw new Error(`tool '${name}' is already registered`);
    const tool = registeredTool(name, options, handler);
    this.tools.set(name, tool);
    this.runner.resumeOnRescue(tool);
    return this;
  }

  /** The principal a request acts for. */
  principal(authInfo: Parameters<PrincipalResolver>[0]): TaskOwner {
    return this.principalOf(authInfo);
  }

  /** A fresh `Server` serving this router's tools and the tasks extension: one per request. */
  createServer(): Server {
    const server = new Server(this.serverInfo, {
      capabilities: {},
      ...(this.instructions !== undefined && { instructions: this.instructions }),
    });
    this.attach(server);
    return server;
  }

  /**
   * Installs the router on a `Server` the caller built (before it is connected): declares the
   * `tools` capability and the tasks extension, and handles `tools/list`, `tools/call` and the
   * three task methods. The server's other features stay the caller's.
   */
  attach(server: Server): void {
    server.registerCapabilities({ tools: {}, extensions: { [TASKS_EXTENSION_ID_V2]: {} } });
    server.setRequestHandler('tools/list', async () => ({ tools: [...this.tools.values()].map((tool) => tool.declaration) }));
    // The fallback handler, not setRequestHandler: the SDK's tools/call wrapper would reshape a
    // task handle into a CallToolResult.
    const previousFallback = server.fallbackRequestHandler;
    server.fallbackRequestHandler = async (request, ctx) => {
      if (request.method === 'tools/call') return this.callTool(request.params, ctx);
      if (previousFallback) return previousFallback(request, ctx);
      throw new ProtocolError(ProtocolErrorCode.MethodNotFound, 'Method not found');
    };
    // Registered with their params schemas: on 2026-07-28 the SDK dispatches these names only then.
    server.setRequestHandler('tasks/get', { params: taskIdParams }, async ({ taskId }, ctx) => this.getTask(taskId, ctx));
    server.setRequestHandler('tasks/update', { params: taskIdParams }, async ({ taskId }, ctx) => this.updateTask(taskId, ctx));
    server.setRequestHandler('tasks/cancel', { params: taskIdParams }, async ({ taskId }, ctx) => this.cancelTask(taskId, ctx));
  }

  /** Waits for the handler rounds running on this instance; for tests and clean shutdown. */
  async drain(): Promise<void> {
    await this.runner.drain();
  }

  private toolNamed = (name: string): RegisteredTool | undefined => this.tools.get(name);

  private async callTool(rawParams: unknown, ctx: ServerContext) {
    const params = z.looseObject({ name: z.string(), arguments: z.unknown().optional() }).safeParse(rawParams);
    if (!params.success) throw new ProtocolError(ProtocolErrorCode.InvalidParams, 'Invalid tools/call params: a tool name is required');
    const tool = this.tools.get(params.data.name);
    if (tool === undefined) throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Unknown tool: ${params.data.name}`);
    const parsed = tool.parseArguments(params.data.arguments);
    if (!parsed.ok) throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Invalid arguments for tool ${tool.name}: ${parsed.message}`);

    const clientCapabilities = clientCapabilitiesOf(ctx);
    const tasksNegotiated = declaresTasks(clientCapabilities);
    if (tool.taskSupport === 'required' && !tasksNegotiated) throw missingTasksCapability();
    const principal = this.principalOf(ctx.http?.authInfo);
    const inputResponses = requestInputResponses(ctx);

    let args = parsed.args;
    if (tool.prepare) {
      const prepared = await tool.prepare(args, { inputResponses, principal, signal: ctx.mcpReq.signal });
      if (isInputRequiredResult(prepared)) return this.checkedInputRequest(prepared, clientCapabilities);
      if (prepared) args = prepared.arguments;
    }

    if (tool.taskSupport === 'forbidden' || !tasksNegotiated || tool.immediate(args)) {
      const context: ToolCallContext = {
        taskId: null,
        signal: ctx.mcpReq.signal,
        inputResponses,
        principal,
        reportProgress: async () => {},
        resumed: null,
      };
      const outcome = await tool.handler(args, context);
      if (isInputRequiredResult(outcome)) return this.checkedInputRequest(outcome, clientCapabilities);
      return { ...outcome, content: outcome.content ?? [] };
    }

    const ttlMs = tool.ttlMs !== undefined ? tool.ttlMs : this.ttlMs;
    // Leased to this instance when the store has leases, since the task runs here.
    const { taskId, token, task } = await createTaskToRun(this.store, {
      toolName: tool.name,
      arguments: args,
      owner: principal,
      pollIntervalMs: tool.pollIntervalMs ?? this.pollIntervalMs,
      ...(ttlMs !== undefined && { ttlMs }),
    });
    // The task as created, before the handler starts. SEP-2663: the handle must not be returned
    // before tasks/get would find the task, which the committed create guarantees.
    if (task === null) throw new ProtocolError(ProtocolErrorCode.InternalError, 'The task expired as soon as it was created');
    this.runner.start({ taskId, tool, args, inputResponses: {}, token, principal, clientCapabilities });
    return createTaskResult(task);
  }

  /** A synchronous request for input, refused when it asks for what the client cannot give. */
  private checkedInputRequest<T extends { inputRequests?: unknown }>(result: T, clientCapabilities: unknown): T {
    const missing = missingInputCapabilities((result.inputRequests ?? {}) as InputRequests, clientCapabilities);
    if (missing !== undefined) throw new MissingRequiredClientCapabilityError({ requiredCapabilities: missing });
    return result;
  }

  private async getTask(taskId: string, ctx: ServerContext) {
    requireTasksCapability(clientCapabilitiesOf(ctx));
    const principal = this.principalOf(ctx.http?.authInfo);
    await authorizeTask(this.store, taskId, principal);
    const task = await renderTask(this.store, taskId);
    if (task === null) throw await vanishedTask(this.store, taskId, principal);
    return task;
  }

  /**
   * Delivers answers. Keys not outstanding are ignored (SEP-2663), but an answer to an
   * outstanding request must have that request's result shape, or the update is refused whole:
   * the handler would otherwise be resumed on a malformed answer. When the last outstanding
   * request is answered, this instance runs the handler again with every answer so far.
   */
  private async updateTask(taskId: string, ctx: ServerContext) {
    const clientCapabilities = clientCapabilitiesOf(ctx);
    requireTasksCapability(clientCapabilities);
    const principal = this.principalOf(ctx.http?.authInfo);
    await authorizeTask(this.store, taskId, principal);
    const responses = requestInputResponses(ctx);
    const outstanding = (await this.store.outstandingInputRequests(taskId)) ?? {};
    for (const [key, response] of Object.entries(responses)) {
      const request = outstanding[key];
      const schema = request && RESPONSE_SCHEMAS[request.method];
      if (schema && !schema.safeParse(response).success) {
        throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Invalid input response '${key}': it does not answer a ${request.method} request`);
      }
    }
    const applied = await this.store.applyInputResponses(taskId, responses);
    if (applied === null) {
      // Terminal tasks answer null too; their answers are moot, and the update is still acknowledged.
      const task = await this.store.getTask(taskId);
      if (task === null || !isTerminal(task.status)) throw await vanishedTask(this.store, taskId, principal);
      return {};
    }
    if (applied.complete && applied.accepted.length > 0) {
      await this.runner.resume(taskId, this.toolNamed, principal, clientCapabilities);
    }
    return {};
  }

  /** Acknowledged whether or not the task still runs; the token stops the handler wherever it runs. */
  private async cancelTask(taskId: string, ctx: ServerContext) {
    requireTasksCapability(clientCapabilitiesOf(ctx));
    const principal = this.principalOf(ctx.http?.authInfo);
    await authorizeTask(this.store, taskId, principal);
    const task = await this.store.cancelTask(taskId);
    if (task === null) throw await vanishedTask(this.store, taskId, principal);
    return {};
  }
}

/** The client capabilities the request declared in its `_meta` envelope. */
function clientCapabilitiesOf(ctx: ServerContext): unknown {
  return (ctx.mcpReq.envelope as Record<string, unknown> | undefined)?.[CLIENT_CAPABILITIES_META_KEY];
}

/** The answers a request carried, keeping only object-shaped entries (anything else answers nothing). */
function requestInputResponses(ctx: ServerContext): InputResponses {
  const responses: InputResponses = {};
  for (const [key, value] of Object.entries(ctx.mcpReq.inputResponses ?? {})) {
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) responses[key] = value as Record<string, unknown>;
  }
  return responses;
}
