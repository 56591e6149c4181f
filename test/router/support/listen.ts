/**
 * A `subscriptions/listen` client for tests: opens the SSE stream for `taskIds` and hands out the
 * messages as they arrive.
 */
import { within } from '../../support/time.js';
import { MODERN_PROTOCOL_VERSION } from '../../../src/router/index.js';
import { envelope } from './requester.js';

export interface ListenMessage {
  jsonrpc: '2.0';
  method?: string;
  id?: string | number;
  params?: Record<string, unknown>;
  result?: Record<string, unknown>;
  error?: { code: number; message: string; data?: unknown };
}

export interface Listener {
  readonly status: number;
  /** Every message so far, in order. */
  readonly messages: ListenMessage[];
  /** The first message (present or future) satisfying `predicate`, within the test bound. */
  next(what: string, predicate: (message: ListenMessage) => boolean): Promise<ListenMessage>;
  /** The `notifications/tasks` for `taskId` whose status is `status`. */
  task(taskId: string, status: string): Promise<Record<string, unknown>>;
  close(): void;
}

let nextId = 1000;

export async function listen(
  url: string,
  taskIds: string[],
  options: { principal?: string | null; tasks?: boolean } = {},
): Promise<Listener> {
  const controller = new AbortController();
  const response = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': MODERN_PROTOCOL_VERSION,
      'mcp-method': 'subscriptions/listen',
      ...(options.principal != null && { authorization: `Bearer ${options.principal}` }),
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: nextId++,
      method: 'subscriptions/listen',
      params: { notifications: { taskIds }, _meta: envelope({ tasks: options.tasks ?? true }) },
    }),
    signal: controller.signal,
  });
  const messages: ListenMessage[] = [];
  const waiters = new Set<() => void>();
  const arrived = (message: ListenMessage) => {
    messages.push(message);
    for (const wake of [...waiters]) wake();
  };
  if (response.headers.get('content-type')?.includes('text/event-stream') && response.body) {
    void (async () => {
      const decoder = new TextDecoder();
      let buffer = '';
      try {
        for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
          buffer += decoder.decode(chunk, { stream: true });
          let end: number;
          while ((end = buffer.indexOf('\n\n')) >= 0) {
            const frame = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            const data = frame
              .split('\n')
              .filter((line) => line.startsWith('data:'))
              .map((line) => line.slice(5).trim())
              .join('');
            if (data) arrived(JSON.parse(data) as ListenMessage);
          }
        }
      } catch {
        // Aborted by close().
      }
    })();
  } else {
    arrived((await response.json()) as ListenMessage);
  }
  const next = (what: string, predicate: (message: ListenMessage) => boolean) =>
    within(
      what,
      new Promise<ListenMessage>((resolve) => {
        const check = () => {
          const found = messages.find(predicate);
          if (found) {
            waiters.delete(check);
            resolve(found);
          }
        };
        waiters.add(check);
        check();
      }),
    );
  return {
    status: response.status,
    messages,
    next,
    async task(taskId, status) {
      const message = await next(`a ${status} notification for ${taskId}`, (m) => m.method === 'notifications/tasks' && m.params?.['taskId'] === taskId && m.params?.['status'] === status);
      return message.params!;
    },
    close: () => controller.abort(),
  };
}
