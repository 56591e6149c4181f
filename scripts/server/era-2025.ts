/**
 * The 2025-11-25 era: MCP TypeScript SDK 1.x, its built-in tasks (tasks/get, tasks/result,
 * tasks/list, tasks/cancel) served from the package's store and message queue through
 * `SdkTaskStore`.
 *
 * SDK 1.x keeps a session's state in the process that created it (its `Server` object resolves the
 * client's answers to the requests it sent), so this era is stateful: one `McpServer` and
 * transport per session, found by the `Mcp-Session-Id` header. Tasks outlive their session and are
 * served by id from any session on any instance.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { TaskMessageQueue } from '@modelcontextprotocol/sdk/experimental/tasks/interfaces.js';
import type { ElicitRequestFormParams } from '@modelcontextprotocol/sdk/types.js';
import { ElicitResultSchema, isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { taskTool, type SdkTaskStore, type TaskToolContext } from '../../src/sdk/index.js';
import { reply, type EraRequest, type ProtocolEra } from './http-entry.js';
import type { ElicitationQuestion, ToolContext, ToolDefinition } from './tools.js';

export interface Era2025Options {
  tasks: SdkTaskStore;
  queue: TaskMessageQueue;
  tools: ToolDefinition[];
  /** `pollInterval` the tools' tasks advertise, in ms. Default: the adapter's (1000). */
  pollIntervalMs?: number;
  /** Registers more on each session's server (tests add tools of their own). */
  configure?: (server: McpServer) => void;
  serverInfo?: { name: string; version: string };
}

interface Session {
  server: McpServer;
  transport: StreamableHTTPServerTransport;
}

export function era2025(options: Era2025Options): ProtocolEra & { readonly sessionCount: number } {
  const sessions = new Map<string, Session>();
  // Made once, not per session: a resumable tool's resume hook belongs to the server, which may
  // resume a task when no session is open at all.
  const taskHandlers = new Map(
    options.tools.filter((tool) => tool.taskSupport !== 'forbidden').map((tool) => [tool.name, taskHandler(options.tasks, tool, options.pollIntervalMs)]),
  );

  const newSession = async (): Promise<Session> => {
    const server = new McpServer(options.serverInfo ?? { name: 'mcp-task-store-postgres demo', version: '0.1.0' }, {
      capabilities: { tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } },
      taskStore: options.tasks,
      taskMessageQueue: options.queue,
    });
    options.tasks.attach(server);
    for (const tool of options.tools) register(server, tool, taskHandlers.get(tool.name));
    options.configure?.(server);
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (sessionId) => void sessions.set(sessionId, { server, transport }),
    });
    transport.onclose = () => {
      if (transport.sessionId) sessions.delete(transport.sessionId);
    };
    await server.connect(transport);
    return { server, transport };
  };

  return {
    name: '2025-11-25',
    get sessionCount() {
      return sessions.size;
    },
    // The fallback era: it takes whatever no newer era claimed, and the SDK negotiates the version.
    accepts: (_request: EraRequest) => true,
    async handle(req: IncomingMessage, res: ServerResponse, body: unknown): Promise<void> {
      const sessionId = req.headers['mcp-session-id'];
      if (typeof sessionId === 'string') {
        const session = sessions.get(sessionId);
        if (!session) return reply(res, 404, -32001, 'Session not found');
        return session.transport.handleRequest(req, res, body);
      }
      if (req.method === 'POST' && (Array.isArray(body) ? body.some(isInitializeRequest) : isInitializeRequest(body))) {
        const session = await newSession();
        return session.transport.handleRequest(req, res, body);
      }
      return reply(res, 400, -32000, 'Bad Request: No valid session ID provided');
    },
    async close(): Promise<void> {
      const open = [...sessions.values()];
      sessions.clear();
      await Promise.all(open.map(({ server }) => server.close().catch(() => {})));
    },
  };
}

/** One era-neutral tool as an SDK 1.x tool: a plain tool, or a task tool with its `taskTool` handler. */
function register(server: McpServer, tool: ToolDefinition, handler: ReturnType<typeof taskHandler> | undefined): void {
  const config = { title: tool.title, description: tool.description, inputSchema: tool.inputSchema };
  if (handler === undefined) {
    server.registerTool(tool.name, config, async (args: unknown, extra) =>
      tool.run(args as never, {
        signal: extra.signal,
        reportStatus: async () => {},
        resumedFrom: null,
        elicit: async (questions) => {
          const entries = Object.entries(questions).map(async ([key, question]) => {
            const answer = await extra.sendRequest({ method: 'elicitation/create', params: formParams(question) }, ElicitResultSchema);
            return [key, answer] as const;
          });
          return Object.fromEntries(await Promise.all(entries));
        },
      }) as never,
    );
    return;
  }
  const taskSupport = tool.taskSupport === 'required' ? 'required' : 'optional';
  server.experimental.tasks.registerToolTask(tool.name, { ...config, execution: { taskSupport } }, handler);
}

function taskHandler(tasks: SdkTaskStore, tool: ToolDefinition, pollIntervalMs: number | undefined) {
  return taskTool(tasks, async (args, context: TaskToolContext) => tool.run(args as never, toolContext(context)) as never, {
    ...(pollIntervalMs !== undefined ? { pollIntervalMs } : {}),
    ...(tool.resumable ? { resumable: { toolName: tool.name } } : {}),
  });
}

function toolContext(context: TaskToolContext): ToolContext {
  return {
    signal: context.signal,
    reportStatus: (message) => context.reportStatus(message),
    resumedFrom: context.resumed ? (context.resumed.lastProgress ?? '') : null,
    elicit: async (questions) =>
      context.elicit(Object.fromEntries(Object.entries(questions).map(([key, question]) => [key, formParams(question)]))),
  };
}

function formParams(question: ElicitationQuestion): ElicitRequestFormParams {
  return { mode: 'form', message: question.message, requestedSchema: question.requestedSchema } as ElicitRequestFormParams;
}
