/**
 * Completion waiters: callers parked in `waitForCompletion` until their task ends.
 *
 * Each waiter sits in its task's set and is settled exactly once: with a snapshot when the task
 * reaches a terminal state, with `null` when the task expires or is discarded, or rejected with
 * the store's error when the store closes.
 * An aborted signal rejects the waiter instead and takes it out of the set, so an abandoned wait
 * holds nothing. Either way the abort listener is removed, so a long-lived signal reused across many
 * waits does not accumulate listeners.
 */
import { TaskStoreError } from '../contract/errors.js';
import type { TaskSnapshot } from '../contract/types.js';
import { cloneJson } from '../contract/json.js';

export type Waiter = (outcome: TaskSnapshot | null | TaskStoreError) => void;

export function waitForOutcome(waiters: Set<Waiter>, signal: AbortSignal | undefined): Promise<TaskSnapshot | null> {
  return new Promise((resolve, reject) => {
    const onAbort = (): void => {
      waiters.delete(waiter);
      reject(signal!.reason);
    };
    const waiter: Waiter = (outcome) => {
      signal?.removeEventListener('abort', onAbort);
      if (outcome instanceof TaskStoreError) reject(outcome);
      else resolve(outcome);
    };
    waiters.add(waiter);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Empties the set and returns who was in it, so they can be woken after the state change. */
export function takeWaiters(waiters: Set<Waiter>): Waiter[] {
  const taken = [...waiters];
  waiters.clear();
  return taken;
}

/** Each waiter gets its own copy, so one caller mutating its snapshot cannot affect another's. */
export function wakeWaiters(waiters: Waiter[], outcome: TaskSnapshot | null | TaskStoreError): void {
  for (const waiter of waiters) waiter(outcome === null || outcome instanceof TaskStoreError ? outcome : cloneJson(outcome));
}
