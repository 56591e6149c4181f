/**
 * Who may act on a task, and what a refusal looks like.
 *
 * SEP-2663 requires every task request to be authorized. A task records the principal that created
 * it, and a later request may act on it only when its principal is the same one (`ownerMatches`:
 * plain equality, so an unowned task is not open to a caller who presents a token). A task the
 * caller does not own answers exactly like one that never existed, `-32602` "Task not found":
 * answering "forbidden" would confirm the id is real, which is what unguessable ids exist to
 * prevent. Expiry follows the same rule, with one exception for the owner: the store's
 * `taskPresence` still knows an expired task for a while, and its owner alone is told
 * "Task has expired".
 */
import { MissingRequiredClientCapabilityError, ProtocolError, ProtocolErrorCode } from '@modelcontextprotocol/server';
import type { AuthInfo } from '@modelcontextprotocol/server';
import { CLIENT_CAPABILITIES_META_KEY_V2, TASKS_EXTENSION_ID_V2, hasTaskClientCapabilityV2 } from '@modelcontextprotocol/ext-tasks/core/v2';
import { TaskStoreError } from '../contract/errors.js';
import { ownerMatches, type TaskOwner, type TaskStore } from '../contract/types.js';

/** Maps the request's validated authentication to the principal that owns its tasks. */
export type PrincipalResolver = (authInfo: AuthInfo | undefined) => TaskOwner;

/**
 * The default principal: none without authentication; otherwise the token's subject when the
 * verifier recorded one as `extra.sub`, else its OAuth client id. A verifier for user tokens issued
 * to a shared client must record `sub`, or pass a resolver of its own.
 */
export const defaultPrincipal: PrincipalResolver = (authInfo) => {
  if (authInfo === undefined) return null;
  const subject = authInfo.extra?.['sub'];
  return typeof subject === 'string' ? subject : authInfo.clientId;
};

export const TASK_NOT_FOUND = 'Task not found';
export const TASK_EXPIRED = 'Task has expired';

export function taskNotFound(): ProtocolError {
  return new ProtocolError(ProtocolErrorCode.InvalidParams, TASK_NOT_FOUND);
}

/** Whether a request's client capabilities (its `_meta` envelope's) declare the tasks extension. */
export function declaresTasks(clientCapabilities: unknown): boolean {
  return hasTaskClientCapabilityV2({ _meta: { [CLIENT_CAPABILITIES_META_KEY_V2]: clientCapabilities } });
}

/** Refuses a task request from a client that did not declare the tasks extension on it. */
export function requireTasksCapability(clientCapabilities: unknown): void {
  if (!declaresTasks(clientCapabilities)) throw missingTasksCapability();
}

export function missingTasksCapability(): MissingRequiredClientCapabilityError {
  return new MissingRequiredClientCapabilityError({
    requiredCapabilities: { extensions: { [TASKS_EXTENSION_ID_V2]: {} } },
  });
}

/**
 * Resolves once `principal` may act on the task; otherwise throws the error to answer with:
 * "Task has expired" for the owner of an expired task the store still remembers, "Task not found"
 * for everything else.
 */
export async function authorizeTask(store: TaskStore, taskId: string, principal: TaskOwner): Promise<void> {
  const presence = await readPresence(store, taskId);
  if (presence.state !== 'missing' && ownerMatches(presence.owner, principal)) {
    if (presence.state === 'present') return;
    throw new ProtocolError(ProtocolErrorCode.InvalidParams, TASK_EXPIRED);
  }
  throw taskNotFound();
}

/**
 * The error for an authorized task that an operation then found gone: it expired (or was removed)
 * between the check and the operation. Resolved again, so the owner still learns it expired.
 */
export async function vanishedTask(store: TaskStore, taskId: string, principal: TaskOwner): Promise<ProtocolError> {
  try {
    await authorizeTask(store, taskId, principal);
  } catch (error) {
    if (error instanceof ProtocolError) return error;
    throw error;
  }
  return taskNotFound();
}

async function readPresence(store: TaskStore, taskId: string) {
  try {
    return await store.taskPresence(taskId);
  } catch (error) {
    // An id the store cannot even parse names no task.
    if (error instanceof TaskStoreError && error.kind === 'invalid_input') return { state: 'missing' } as const;
    throw error;
  }
}
