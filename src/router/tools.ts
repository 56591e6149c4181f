/**
 * Tools as the router registers them: a zod schema for the arguments, a task-support mode, and a
 * handler that may ask for input by returning `inputRequired(...)` (from
 * `@modelcontextprotocol/server`) and is then run again from the top with the answers.
 */
import type { InputRequiredResult, Tool, ToolAnnotations } from '@modelcontextprotocol/server';
import { z } from 'zod';
import type { CallToolResult, InputResponses, TaskOwner } from '../contract/types.js';

/**
 * SEP-2663 task support. `forbidden` tools always answer synchronously; `optional` tools run as a
 * task when the request declares the tasks extension and synchronously otherwise; `required` tools
 * refuse a request without the extension (`-32021`).
 */
export type TaskSupport = 'forbidden' | 'optional' | 'required';

export interface ToolCallContext {
  /** The task this run belongs to; null for a synchronous call. */
  readonly taskId: string | null;
  /**
   * Aborted when the run should stop: the task was cancelled or expired (on whichever instance
   * that happened), or a synchronous caller went away.
   */
  readonly signal: AbortSignal;
  /**
   * The answers to the input this tool asked for. In a task: every answer of every round so far,
   * as the store recorded them. Synchronously: what the client's retry carried.
   */
  readonly inputResponses: InputResponses;
  /** The principal the call runs for (null without authentication). */
  readonly principal: TaskOwner;
  /** Sets the task's status message while it works; does nothing for a synchronous call. */
  reportProgress(message: string): Promise<void>;
  /**
   * Set when this run resumes a task whose runner died (a `resumable` tool): pick up from
   * `lastProgress`, the last message the lost run reported. null in every other run.
   */
  readonly resumed: ResumedRun | null;
}

export interface ResumedRun {
  /** Runs a rescue ended before this one. */
  readonly previousAttempts: number;
  /** The runner id of the instance that was lost. */
  readonly lostRunner: string | null;
  /** The progress message the lost run last reported, if any. */
  readonly lastProgress: string | null;
}

/** What a handler returns: the tool's result, or a request for input. */
export type ToolOutcome = CallToolResult | InputRequiredResult;

export type ToolHandler<Args> = (args: Args, context: ToolCallContext) => ToolOutcome | Promise<ToolOutcome>;

export interface PrepareContext {
  readonly inputResponses: InputResponses;
  readonly principal: TaskOwner;
  readonly signal: AbortSignal;
}

export interface ToolOptions<Schema extends z.ZodType<Record<string, unknown>>> {
  title?: string;
  description?: string;
  /** The arguments; validated on every call (`-32602` when they do not match). Default: none. */
  inputSchema?: Schema;
  annotations?: ToolAnnotations;
  /** Default `forbidden`. */
  taskSupport?: TaskSupport;
  /**
   * Answer this call synchronously even though a task could be created (an `optional` tool only):
   * for work that is instant for these arguments.
   */
  immediate?: (args: z.output<Schema>) => boolean;
  /**
   * Runs on every `tools/call` round before a task exists, to gather input synchronously over
   * multi round-trip requests (SEP-2322) before handing off to a task, as SEP-2663 recommends.
   * Return `inputRequired(...)` to ask the client; return `{ arguments }` to start the call with
   * arguments that carry what was gathered (they are what a resumed task sees); return nothing to
   * start with the arguments as they are.
   */
  prepare?: (
    args: z.output<Schema>,
    context: PrepareContext,
  ) => InputRequiredResult | { arguments: z.output<Schema> } | void | Promise<InputRequiredResult | { arguments: z.output<Schema> } | void>;
  /**
   * When the instance running one of this tool's tasks dies, run the handler again on a live
   * instance (with `context.resumed` set) instead of failing the task. Only on a store with
   * execution leases, and only as many times as its `leases.maxAttempts`. Default false.
   */
  resumable?: boolean;
  /** The task's TTL (ms from creation; null: never expires). Default: the router's. */
  ttlMs?: number | null;
  /** The polling interval suggested to clients. Default: the router's. */
  pollIntervalMs?: number;
}

/** A registered tool, its schema erased to what the router needs. */
export interface RegisteredTool {
  name: string;
  taskSupport: TaskSupport;
  resumable: boolean;
  ttlMs?: number | null;
  pollIntervalMs?: number;
  declaration: Tool;
  parseArguments(value: unknown): { ok: true; args: Record<string, unknown> } | { ok: false; message: string };
  immediate(args: Record<string, unknown>): boolean;
  prepare: ToolOptions<z.ZodType<Record<string, unknown>>>['prepare'];
  handler: ToolHandler<Record<string, unknown>>;
}

const NO_ARGUMENTS = z.object({});

export function registeredTool<Schema extends z.ZodType<Record<string, unknown>>>(
  name: string,
  options: ToolOptions<Schema>,
  handler: ToolHandler<z.output<Schema>>,
): RegisteredTool {
  const schema: z.ZodType<Record<string, unknown>> = options.inputSchema ?? NO_ARGUMENTS;
  const { $schema: _dialect, ...inputSchema } = z.toJSONSchema(schema, { io: 'input' }) as Record<string, unknown>;
  const declaration: Tool = {
    name,
    ...(options.title !== undefined && { title: options.title }),
    ...(options.description !== undefined && { description: options.description }),
    inputSchema: { ...inputSchema, type: 'object' },
    ...(options.annotations !== undefined && { annotations: options.annotations }),
  };
  return {
    name,
    taskSupport: options.taskSupport ?? 'forbidden',
    resumable: options.resumable ?? false,
    ...(options.ttlMs !== undefined && { ttlMs: options.ttlMs }),
    ...(options.pollIntervalMs !== undefined && { pollIntervalMs: options.pollIntervalMs }),
    declaration,
    parseArguments(value) {
      const parsed = schema.safeParse(value ?? {});
      if (parsed.success) return { ok: true, args: parsed.data };
      return { ok: false, message: z.prettifyError(parsed.error) };
    },
    immediate: (args) => options.immediate?.(args as z.output<Schema>) ?? false,
    prepare: options.prepare as RegisteredTool['prepare'],
    handler: handler as ToolHandler<Record<string, unknown>>,
  };
}
