/**
 * What `SdkTaskStore.attach` changes on an SDK 1.x server, and the only places the integration
 * reaches past the SDK's public API (checked at attach time, so an SDK that moved them fails there
 * rather than silently polling):
 *
 * - the transport's `onmessage` (public): wrapped so that each message is handled inside a
 *   request context naming its caller's auth info;
 * - `Protocol._waitForTaskUpdate` (private): the wait of the built-in tasks/result handler, a sleep
 *   of `pollInterval` in the SDK, replaced by a wait on the store that wakes when the task settles
 *   (NOTIFY from any instance) or a message is queued for it (the SDK sets `input_required` before
 *   it queues the request for input, so waiting for completion alone would deadlock). The snapshot
 *   it wakes with answers the handler's next reads of the task (`TaskRequestContext.settled`), as
 *   does the handler's first read when the task had settled already;
 * - `Protocol._taskStore` / `_taskMessageQueue` (private): read, to check the server was built
 *   with this adapter and to find the queue to wait on.
 */
import type { TaskMessageQueue } from '@modelcontextprotocol/sdk/experimental/tasks/interfaces.js';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ErrorCode, McpError, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { TaskStore } from '../contract/types.js';
import { toMcpError } from './errors.js';
import { currentTaskRequest, withTaskRequestContext } from './request-context.js';

/** A queue that can say when a message arrives, as `PostgresTaskMessageQueue` can. */
export interface WakingTaskMessageQueue extends TaskMessageQueue {
  waitForMessage(taskId: string, sessionId: string | undefined, signal?: AbortSignal): Promise<void>;
}

interface ProtocolInternals {
  _taskStore?: unknown;
  _taskMessageQueue?: TaskMessageQueue;
  _waitForTaskUpdate?: (taskId: string, signal: AbortSignal, sessionId?: string) => Promise<void>;
  transport?: Transport;
  connect(transport: Transport): Promise<void>;
  notification: Server['notification'];
}

const bound = new WeakSet<object>();

/** What attach binds: the adapter the server was created with, and the store behind it. */
export interface BoundAdapter {
  readonly store: TaskStore;
}

export function bindServer(adapter: BoundAdapter, server: McpServer | Server): void {
  const protocol = ('server' in server ? server.server : server) as unknown as ProtocolInternals;
  if (bound.has(protocol)) return;
  if (protocol._taskStore !== adapter) {
    throw new Error('SdkTaskStore.attach: the server was not created with this store as its taskStore option');
  }
  if (typeof protocol._waitForTaskUpdate !== 'function') {
    throw new Error(
      'SdkTaskStore.attach: this @modelcontextprotocol/sdk has no Protocol._waitForTaskUpdate (supported: ^1.32); tasks/result cannot wait on the store',
    );
  }
  const queue = protocol._taskMessageQueue;
  protocol._waitForTaskUpdate = (taskId, signal, sessionId) => waitForTaskUpdate(adapter.store, queue, taskId, signal, sessionId);

  const bindTransport = (transport: Transport) => {
    const handle = transport.onmessage;
    transport.onmessage = (message, extra) => {
      const resultOf = taskResultRequested(message);
      const context = { ...(extra?.authInfo ? { authInfo: extra.authInfo } : {}), ...(resultOf ? { resultOf } : {}), server: protocol };
      return withTaskRequestContext(context, () => handle?.(message, extra));
    };
  };
  const connect = protocol.connect.bind(protocol);
  protocol.connect = async (transport) => {
    await connect(transport);
    bindTransport(transport);
  };
  if (protocol.transport) bindTransport(protocol.transport);
  bound.add(protocol);
}

/** The task id of a `tasks/result` request, else undefined. */
function taskResultRequested(message: JSONRPCMessage): string | undefined {
  if (!('method' in message) || message.method !== 'tasks/result') return undefined;
  const taskId = (message.params as { taskId?: unknown } | undefined)?.taskId;
  return typeof taskId === 'string' ? taskId : undefined;
}

function isWaking(queue: TaskMessageQueue | undefined): queue is WakingTaskMessageQueue {
  return typeof (queue as Partial<WakingTaskMessageQueue> | undefined)?.waitForMessage === 'function';
}

/**
 * Resolves when there may be something new for tasks/result to deliver: the task settled, expired
 * or vanished, or a message was queued for it. Rejects as the SDK's own wait does when the request
 * is cancelled.
 */
async function waitForTaskUpdate(
  store: TaskStore,
  queue: TaskMessageQueue | undefined,
  taskId: string,
  signal: AbortSignal,
  sessionId: string | undefined,
): Promise<void> {
  const requestCancelled = () => new McpError(ErrorCode.InvalidRequest, 'Request cancelled');
  if (signal.aborted) throw requestCancelled();
  const done = new AbortController();
  const cancelled = new Promise<never>((_, reject) => {
    done.signal.addEventListener('abort', () => reject(requestCancelled()), { once: true });
  });
  const onAbort = () => done.abort();
  signal.addEventListener('abort', onAbort, { once: true });
  const context = currentTaskRequest();
  const settled = store.waitForCompletion(taskId, { signal: done.signal }).then((snapshot) => {
    if (context && snapshot) context.settled = snapshot;
  });
  const wakes: Promise<unknown>[] = [settled, cancelled];
  if (isWaking(queue)) wakes.push(queue.waitForMessage(taskId, sessionId, done.signal));
  // A queue that cannot announce messages is looked at again after a poll interval.
  else if (queue) wakes.push(new Promise((resolve) => setTimeout(resolve, 1000).unref()));
  try {
    await Promise.race(wakes);
  } catch (error) {
    if (signal.aborted) throw requestCancelled();
    throw toMcpError(error);
  } finally {
    signal.removeEventListener('abort', onAbort);
    done.abort();
  }
}
