/**
 * The 2026-07-28 era: the SEP-2663 tasks extension, served by the package's router
 * (`mcp-task-store-postgres/router`) over `@modelcontextprotocol/server` 2.x. It is sessionless:
 * every request is answered from the store, so any instance serves any task.
 *
 * The demo tools are written once for every era (tools.ts). A 2026-07-28 tool asks for input by
 * returning an input-required result and is run again from the top with the answers, on whichever
 * instance receives the last one; `elicit` bridges the two styles: it returns the answers once the
 * task has them, and otherwise ends this round with the questions.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { toNodeHandler } from '@modelcontextprotocol/node';
import { acceptedContent, inputRequired, ProtocolError, type InputRequests } from '@modelcontextprotocol/server';
import { z } from 'zod';
import type { TaskStore } from '../../src/index.js';
import { createTaskHttpHandler, MODERN_PROTOCOL_VERSION, TaskRouter, type ToolCallContext } from '../../src/router/index.js';
import type { EraRequest, ProtocolEra } from './http-entry.js';
import { ToolProtocolError, type ElicitationAnswer, type ElicitationQuestion, type ToolDefinition } from './tools.js';

export interface Era2026Options {
  store: TaskStore;
  tools: ToolDefinition[];
  pollIntervalMs?: number;
  /** Registers more on the router (tests add tools of their own). */
  configure?: (router: TaskRouter) => void;
  /** Background failures (a round the store could not record). Default: logged. */
  onError?: (error: Error) => void;
}

const ENVELOPE_VERSION_KEY = 'io.modelcontextprotocol/protocolVersion';

/**
 * A 2026-07-28 request: it names the revision in its header or in its `_meta` envelope (SEP-2575),
 * and carries no 2025 session.
 */
export function isModernRequest(request: EraRequest): boolean {
  if (request.sessionId !== undefined) return false;
  if (request.protocolVersion !== undefined) return request.protocolVersion === MODERN_PROTOCOL_VERSION;
  const messages = Array.isArray(request.body) ? request.body : [request.body];
  return messages.some((message) => {
    const meta = (message as { params?: { _meta?: Record<string, unknown> } } | null)?.params?._meta;
    return meta !== undefined && meta !== null && ENVELOPE_VERSION_KEY in meta;
  });
}

/** The router serving the demo tools (and the conformance suite's 2026-only one) from `store`. */
export function createDemoRouter(options: Era2026Options): TaskRouter {
  const router = new TaskRouter({
    store: options.store,
    serverInfo: { name: 'mcp-task-store-postgres demo', version: '0.1.0' },
    ...(options.pollIntervalMs !== undefined && { pollIntervalMs: options.pollIntervalMs }),
    onError: options.onError ?? ((error) => console.error(`tasks extension: ${error.message}`)),
  });
  for (const tool of options.tools) registerTool(router, tool);
  registerTestToolWithTask(router);
  options.configure?.(router);
  return router;
}

export function era2026(options: Era2026Options): ProtocolEra & { readonly router: TaskRouter } {
  const router = createDemoRouter(options);
  const handler = createTaskHttpHandler(router);
  const serve = toNodeHandler(handler);
  return {
    name: MODERN_PROTOCOL_VERSION,
    router,
    accepts: isModernRequest,
    handle: (req: IncomingMessage, res: ServerResponse, body: unknown) => serve(req, res, body),
    async close() {
      await handler.close();
    },
  };
}

/** Answers the calls of the conformance suite's immediate path (`slow_compute` with `seconds: 0`) in the call itself. */
const IMMEDIATE: Record<string, (args: Record<string, unknown>) => boolean> = {
  slow_compute: (args) => args['seconds'] === 0,
};

/** Ends a round: the handler asked questions the task has no answers to yet. */
class AnswersNeeded {
  constructor(readonly questions: Record<string, ElicitationQuestion>) {}
}

function registerTool(router: TaskRouter, tool: ToolDefinition): void {
  const immediate = IMMEDIATE[tool.name];
  router.tool(
    tool.name,
    {
      title: tool.title,
      description: tool.description,
      inputSchema: z.object(tool.inputSchema),
      taskSupport: tool.taskSupport,
      ...(tool.resumable && { resumable: true }),
      ...(immediate !== undefined && { immediate }),
    },
    async (args, context) => {
      try {
        return await tool.run(args as never, {
          signal: context.signal,
          reportStatus: (message) => context.reportProgress(message),
          elicit: async (questions) => answersOrAsk(questions, context),
          resumedFrom: context.resumed ? (context.resumed.lastProgress ?? '') : null,
        });
      } catch (error) {
        if (error instanceof AnswersNeeded) return inputRequired({ inputRequests: elicitations(error.questions) });
        if (error instanceof ToolProtocolError) throw new ProtocolError(error.code, error.message, error.data);
        throw error;
      }
    },
  );
}

/** The answers to every question, when this round has them all; otherwise the round ends asking. */
function answersOrAsk(questions: Record<string, ElicitationQuestion>, context: ToolCallContext): Record<string, ElicitationAnswer> {
  const keys = Object.keys(questions);
  if (!keys.every((key) => context.inputResponses[key] !== undefined)) throw new AnswersNeeded(questions);
  return Object.fromEntries(keys.map((key) => [key, context.inputResponses[key] as unknown as ElicitationAnswer]));
}

function elicitations(questions: Record<string, ElicitationQuestion>): InputRequests {
  return Object.fromEntries(
    Object.entries(questions).map(([key, question]) => [
      key,
      { method: 'elicitation/create', params: { mode: 'form', message: question.message, requestedSchema: question.requestedSchema } },
    ]),
  ) as InputRequests;
}

const userName = z.object({ name: z.string() });

/**
 * The conformance suite's MRTR-then-task tool (2026-07-28 only): round 1 answers with an
 * input-required result asking for `user_name`; round 2, carrying the answer, starts a task whose
 * result names the user.
 */
function registerTestToolWithTask(router: TaskRouter): void {
  router.tool(
    'test_tool_with_task',
    {
      title: 'Test tool with task',
      description: 'Asks for a name over multi round-trip requests, then finishes the work as a task.',
      inputSchema: z.object({ user_name: z.string().optional() }),
      taskSupport: 'required',
      prepare: (args, { inputResponses }) => {
        if (args.user_name !== undefined) return;
        const answer = acceptedContent(inputResponses, 'user_name', userName);
        if (answer === undefined) {
          return inputRequired({
            inputRequests: { user_name: inputRequired.elicit({ message: 'What is your name?', requestedSchema: userName }) },
          });
        }
        return { arguments: { user_name: answer.name } };
      },
    },
    ({ user_name }) => ({ content: [{ type: 'text', text: `Hello, ${user_name ?? 'stranger'}! The task is done.` }] }),
  );
}
