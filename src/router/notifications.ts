/**
 * `notifications/tasks` on `subscriptions/listen` streams (SEP-2663 with SEP-2575).
 *
 * A client names the tasks it wants to hear about in `notifications.taskIds`; the router
 * acknowledges the ones the caller owns (others are left out, exactly as if they did not exist)
 * and then pushes each task's complete state, as `tasks/get` would return it, when it changes.
 *
 * The changes come from the store, not from this instance: with a store that offers
 * {@link TaskChangeFeed} (both stores here do; PostgreSQL drives it by LISTEN/NOTIFY) a subscriber
 * on one instance hears a task settle, ask for input or be cancelled through any other instance,
 * with no polling per subscriber. A store without the feed is watched through
 * `waitForCompletion`, which hears terminal states only. Either way notifications are best effort:
 * `tasks/get` stays authoritative.
 */
import { SUBSCRIPTION_ID_META_KEY, SERVER_INFO_META_KEY, type Implementation } from '@modelcontextprotocol/server';
import { hasTaskChangeFeed, type TaskWatch } from '../contract/task-changes.js';
import { ownerMatches, type TaskOwner, type TaskStore } from '../contract/types.js';
import { renderTask } from './wire.js';

export type RequestId = string | number;

interface StreamOptions {
  store: TaskStore;
  subscriptionId: RequestId;
  taskIds: string[];
  serverInfo: Implementation;
  keepAliveMs: number;
  signal: AbortSignal;
  onError: (error: Error) => void;
}

/** The tasks among `taskIds` that `principal` may hear about: present and owned by it. */
export async function subscribableTasks(store: TaskStore, taskIds: readonly string[], principal: TaskOwner): Promise<string[]> {
  const accepted: string[] = [];
  for (const taskId of new Set(taskIds)) {
    const presence = await store.taskPresence(taskId).catch(() => ({ state: 'missing' }) as const);
    if (presence.state === 'present' && ownerMatches(presence.owner, principal)) accepted.push(taskId);
  }
  return accepted;
}

/** The open streams of one handler, so closing the handler can end them gracefully. */
export class TaskListenStreams {
  private readonly open = new Set<() => void>();

  get openCount(): number {
    return this.open.size;
  }

  /**
   * The SSE response for one subscription: the acknowledgement first, then the current state of
   * every accepted task, then a notification per change until the client goes away.
   */
  async serve(options: StreamOptions): Promise<Response> {
    const { store, subscriptionId, taskIds, signal } = options;
    const encoder = new TextEncoder();
    const lastSent = new Map<string, string>();
    const rendering = new Map<string, Promise<void>>();
    const dirty = new Set<string>();
    let controller!: ReadableStreamDefaultController<Uint8Array>;
    let closed = false;
    let watch: TaskWatch | null = null;
    const waits = new AbortController();

    const write = (message: unknown) => {
      if (closed) return;
      try {
        controller.enqueue(encoder.encode(`event: message\ndata: ${JSON.stringify(message)}\n\n`));
      } catch (error) {
        options.onError(asError(error));
      }
    };
    const stamp = (meta: Record<string, unknown> | undefined) => ({ ...meta, [SUBSCRIPTION_ID_META_KEY]: subscriptionId });

    const teardown = (graceful: boolean) => {
      if (closed) return;
      if (graceful) {
        write({
          jsonrpc: '2.0',
          id: subscriptionId,
          result: { resultType: 'complete', _meta: { ...stamp(undefined), [SERVER_INFO_META_KEY]: options.serverInfo } },
        });
      }
      closed = true;
      watch?.close();
      waits.abort();
      clearInterval(keepAlive);
      signal.removeEventListener('abort', onAbort);
      this.open.delete(closeGracefully);
      try {
        controller.close();
      } catch {
        // Already closed by the client.
      }
    };
    const closeGracefully = () => teardown(true);
    const onAbort = () => teardown(false);

    // One render per task at a time; a change during a render renders again after it.
    const announce = (taskId: string): void => {
      if (closed) return;
      if (rendering.has(taskId)) {
        dirty.add(taskId);
        return;
      }
      const render = (async () => {
        try {
          do {
            dirty.delete(taskId);
            const task = await renderTask(store, taskId);
            if (task === null || closed) return; // gone: there is nothing more to say about it
            const { _meta, ...params } = task;
            const json = JSON.stringify(params);
            if (lastSent.get(taskId) === json) continue;
            lastSent.set(taskId, json);
            write({ jsonrpc: '2.0', method: 'notifications/tasks', params: { ...params, _meta: stamp(_meta) } });
          } while (dirty.has(taskId) && !closed);
        } catch (error) {
          options.onError(asError(error));
        } finally {
          rendering.delete(taskId);
        }
      })();
      rendering.set(taskId, render);
    };

    // Armed before the acknowledgement: a change after the client learns it is subscribed is heard.
    if (hasTaskChangeFeed(store)) {
      watch = await store.watchTasks(taskIds, announce);
    } else {
      for (const taskId of taskIds) {
        store.waitForCompletion(taskId, { signal: waits.signal }).then(
          (snapshot) => snapshot && announce(taskId),
          () => {},
        );
      }
    }

    const stream = new ReadableStream<Uint8Array>({
      start: (streamController) => {
        controller = streamController;
        write({
          jsonrpc: '2.0',
          method: 'notifications/subscriptions/acknowledged',
          params: { notifications: { taskIds }, _meta: stamp(undefined) },
        });
        for (const taskId of taskIds) announce(taskId);
      },
      cancel: () => teardown(false),
    });
    const keepAlive = setInterval(() => {
      if (closed) return;
      try {
        controller.enqueue(encoder.encode(': keepalive\n\n'));
      } catch {
        teardown(false);
      }
    }, options.keepAliveMs);
    keepAlive.unref?.();
    this.open.add(closeGracefully);
    if (signal.aborted) teardown(false);
    else signal.addEventListener('abort', onAbort, { once: true });

    return new Response(stream, {
      status: 200,
      headers: {
        'Content-Type': 'text/event-stream',
        'Cache-Control': 'no-cache, no-transform',
        Connection: 'keep-alive',
        'X-Accel-Buffering': 'no',
      },
    });
  }

  /** Ends every open stream with the graceful-close result. */
  closeAll(): void {
    for (const close of [...this.open]) close();
  }
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}
