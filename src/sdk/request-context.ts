/**
 * Who is asking. The SDK hands a task store only the session id, never the request's auth info, so
 * the adapter carries the caller through the request in AsyncLocalStorage: every store call the
 * SDK makes while handling a message (its built-in tasks/* handlers, the tool's own calls, and the
 * tool's background work started from there) runs inside the context of that message.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type { Notification } from '@modelcontextprotocol/sdk/types.js';
import type { TaskOwner, TaskSnapshot } from '../contract/types.js';

export interface TaskRequestContext {
  /** The auth info the transport attached to the request (`req.auth` for Streamable HTTP). */
  authInfo?: AuthInfo;
  /** The server object handling the request, for the notifications a tool helper sends. */
  server?: { notification(notification: Notification): Promise<void> };
  /** The task this request is a `tasks/result` for, if it is one. */
  resultOf?: string;
  /**
   * The settled task this tasks/result request found (its first read, or the wait it woke from).
   * Settled is final, so the reads of it that the SDK makes next in the same request are answered
   * from it, not the database.
   */
  settled?: TaskSnapshot;
}

/** Maps a request's auth info to the principal that owns the tasks it creates. */
export type PrincipalOf = (authInfo: AuthInfo) => TaskOwner;

/**
 * The OAuth subject when the token verifier recorded one (`authInfo.extra.sub`), else the OAuth
 * client id. Servers that name principals differently pass their own `principal` option.
 */
export const defaultPrincipal: PrincipalOf = (authInfo) => {
  const subject = authInfo.extra?.sub;
  return typeof subject === 'string' ? subject : authInfo.clientId;
};

const storage = new AsyncLocalStorage<TaskRequestContext>();

/**
 * Runs `fn` as the handling of one request by `context`'s caller. `SdkTaskStore.attach` does this
 * for every message a server receives; call it yourself only for a transport you drive by hand.
 */
export function withTaskRequestContext<T>(context: TaskRequestContext, fn: () => T): T {
  return storage.run(context, fn);
}

/** The context of the request being handled, or undefined outside any request. */
export function currentTaskRequest(): TaskRequestContext | undefined {
  return storage.getStore();
}
