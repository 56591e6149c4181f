/**
 * One-shot timers for TTL deadlines.
 *
 * `setTimeout` cannot wait longer than 2^31-1 ms (about 24.8 days; longer delays fire after 1 ms),
 * while a task's TTL may run for years. A long deadline is therefore reached in steps, each at most
 * the maximum delay, re-checking the wall clock every time.
 *
 * Every timer is unref'd: a pending expiry must never keep a process alive on its own. Both
 * stores arm their TTL deadlines with these.
 */

const MAX_TIMER_DELAY_MS = 2 ** 31 - 1;

/** Cancels a scheduled deadline. Calling it more than once, or after it fired, is harmless. */
export type CancelDeadline = () => void;

/**
 * Calls `fire` once `Date.now() >= deadlineMs`. The caller handles deadlines already in the past
 * itself: this never fires synchronously.
 */
export function scheduleDeadline(deadlineMs: number, fire: () => void): CancelDeadline {
  let handle: ReturnType<typeof setTimeout> | undefined;
  let cancelled = false;

  const arm = (): void => {
    const remaining = deadlineMs - Date.now();
    handle = setTimeout(onTimeout, Math.min(Math.max(remaining, 1), MAX_TIMER_DELAY_MS));
    handle.unref?.();
  };

  function onTimeout(): void {
    handle = undefined;
    if (cancelled) return;
    // A timer may wake a little before the wall clock agrees, or long before a multi-step deadline.
    if (Date.now() < deadlineMs) arm();
    else fire();
  }

  arm();
  return () => {
    cancelled = true;
    if (handle !== undefined) clearTimeout(handle);
    handle = undefined;
  };
}

/** A repeating, unref'd interval (clamped to what `setInterval` can honour). */
export function scheduleRepeating(intervalMs: number, run: () => void): () => void {
  const handle = setInterval(run, Math.min(Math.max(intervalMs, 1), MAX_TIMER_DELAY_MS));
  handle.unref?.();
  return () => clearInterval(handle);
}
