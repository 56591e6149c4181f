/**
 * The demo server's tools, written once for every protocol era. A tool is a plain async function
 * of its arguments and a {@link ToolContext}; each era's binding (era-2025.ts for SDK 1.x) turns
 * that into its protocol's tool, task and input-request machinery.
 */
import { z } from 'zod';
import type { CallToolResult } from '../../src/index.js';

export type TaskSupport = 'forbidden' | 'optional' | 'required';

/** One `elicitation/create` form question. */
export interface ElicitationQuestion {
  message: string;
  requestedSchema: {
    type: 'object';
    properties: Record<string, { type: 'string' | 'number' | 'integer' | 'boolean'; title?: string; description?: string }>;
    required?: string[];
  };
}

export interface ElicitationAnswer {
  action: 'accept' | 'decline' | 'cancel';
  content?: Record<string, unknown>;
}

/** What a running tool may do besides computing its result. */
export interface ToolContext {
  /** Aborted when the call's task is cancelled (on any instance) or expires. */
  signal: AbortSignal;
  /** Progress: the task stays `working`, with this status message. */
  reportStatus(message: string): Promise<void>;
  /** Asks the client every question at once, keyed by names of the tool's choosing. */
  elicit(questions: Record<string, ElicitationQuestion>): Promise<Record<string, ElicitationAnswer>>;
  /**
   * In a run that resumes a task whose server died (a `resumable` tool): the last progress
   * message the lost run reported ('' if none). null in every other run.
   */
  resumedFrom: string | null;
}

/** Thrown by a tool whose call must end in a JSON-RPC error rather than in a result. */
export class ToolProtocolError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
    this.name = 'ToolProtocolError';
  }
}

export interface ToolDefinition<Shape extends z.ZodRawShape = z.ZodRawShape> {
  name: string;
  title: string;
  description: string;
  inputSchema: Shape;
  taskSupport: TaskSupport;
  /** Run again on a live server when the one running its task dies, rather than fail the task. */
  resumable?: boolean;
  run(args: z.output<z.ZodObject<Shape>>, context: ToolContext): Promise<CallToolResult>;
}

const text = (value: string): CallToolResult => ({ content: [{ type: 'text', text: value }] });

/** Resolves after `ms`, or rejects with the signal's reason once it is aborted. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(() => (signal.removeEventListener('abort', stop), resolve()), ms);
    const stop = () => (clearTimeout(timer), reject(signal.reason));
    signal.addEventListener('abort', stop, { once: true });
  });
}

const tool = <Shape extends z.ZodRawShape>(definition: ToolDefinition<Shape>) => definition;

export const greet = tool({
  name: 'greet',
  title: 'Greet',
  description: 'Says hello, at once: a tool without task support.',
  inputSchema: { name: z.string().describe('Who to greet') },
  taskSupport: 'forbidden',
  run: async ({ name }) => text(`Hello, ${name}!`),
});

export const slowCompute = tool({
  name: 'slow_compute',
  title: 'Slow compute',
  description:
    'Works for `seconds` seconds, reporting progress in the task status message, then returns a text result. Stops early when cancelled; resumes from its last progress on another server when its own dies.',
  inputSchema: {
    seconds: z.number().min(0).max(3600).describe('How long to work (0: at once)'),
    label: z.string().optional().describe('Named in the progress messages and the result'),
  },
  taskSupport: 'optional',
  resumable: true,
  run: async ({ seconds, label }, context) => {
    const name = label ?? 'slow_compute';
    const resumedAt = context.resumedFrom === null ? null : progressIn(context.resumedFrom, name);
    for (let done = resumedAt ?? 0; done < seconds; done = Math.min(seconds, done + 1)) {
      await context.reportStatus(`${name}: ${done} of ${seconds} s`);
      await pause(Math.min(1, seconds - done) * 1000, context.signal);
    }
    const resumed = resumedAt === null ? '' : ` (resumed at ${resumedAt} s)`;
    return text(`${name}: computed for ${seconds} s${resumed}`);
  },
});

/** The seconds done in a `slow_compute` progress message (0 for anything else). */
function progressIn(message: string, name: string): number {
  const match = /: (\d+(?:\.\d+)?) of [\d.]+ s$/.exec(message);
  return match && message.startsWith(`${name}: `) ? Number(match[1]) : 0;
}

export const confirmDelete = tool({
  name: 'confirm_delete',
  title: 'Confirm delete',
  description: 'Asks for confirmation by elicitation (the task is input_required meanwhile), then answers. Deletes nothing.',
  inputSchema: { filename: z.string().describe('The file the question is about') },
  taskSupport: 'optional',
  run: async ({ filename }, context) => {
    const { confirm } = await context.elicit({
      confirm: {
        message: `Delete ${filename}?`,
        requestedSchema: {
          type: 'object',
          properties: { confirm: { type: 'boolean', title: `Delete ${filename}` } },
          required: ['confirm'],
        },
      },
    });
    const yes = confirm?.action === 'accept' && confirm.content?.confirm === true;
    return text(yes ? `Deleted ${filename}` : `Kept ${filename}`);
  },
});

export const multiInput = tool({
  name: 'multi_input',
  title: 'Multiple inputs',
  description: 'Asks two questions at once (two input requests pending together), then combines the answers.',
  inputSchema: {},
  taskSupport: 'optional',
  run: async (_args, context) => {
    const answers = await context.elicit({
      name: {
        message: 'Your name?',
        requestedSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
      },
      color: {
        message: 'Your favourite colour?',
        requestedSchema: { type: 'object', properties: { color: { type: 'string' } }, required: ['color'] },
      },
    });
    const name = answers.name?.content?.name ?? 'someone';
    const color = answers.color?.content?.color ?? 'no colour';
    return text(`${String(name)} likes ${String(color)}`);
  },
});

export const failingJob = tool({
  name: 'failing_job',
  title: 'Failing job',
  description: 'Works for about a second, then fails with a tool execution error.',
  inputSchema: {},
  taskSupport: 'required',
  run: async (_args, context) => {
    await pause(1000, context.signal);
    return { content: [{ type: 'text', text: 'failing_job: the job failed, as it always does' }], isError: true };
  },
});

export const protocolErrorJob = tool({
  name: 'protocol_error_job',
  title: 'Protocol error job',
  description: 'Ends in a JSON-RPC protocol error instead of a result.',
  inputSchema: {},
  taskSupport: 'optional',
  run: async () => {
    throw new ToolProtocolError(-32603, 'protocol_error_job: internal error, as it always is');
  },
});

/** Every tool the demo server offers, in `tools/list` order. */
export const demoTools: ToolDefinition[] = [greet, slowCompute, confirmDelete, multiInput, failingJob, protocolErrorJob] as ToolDefinition[];
