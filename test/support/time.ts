/** Waiting in tests: every wait is bounded, so a slow or broken store fails with a message. */

/** Upper bound on anything that must happen promptly. Passing stores never wait this long. */
export const BOUND_MS = 3_000;
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Awaits `promise`, failing the test if it takes longer than `ms`. */
export async function within<T>(what: string, promise: Promise<T>, ms = BOUND_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not happen within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Polls `probe` until it holds, failing the test after `ms`. */
export async function eventually(what: string, probe: () => Promise<boolean>, ms = BOUND_MS): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await probe())) {
    if (Date.now() >= deadline) throw new Error(`${what} did not happen within ${ms} ms`);
    await sleep(5);
  }
}

/** Whether `promise` is still pending after `ms`. */
export async function stillPending(promise: Promise<unknown>, ms: number): Promise<boolean> {
  const pending = Symbol('pending');
  const settled = promise.then(
    () => 'settled' as const,
    () => 'settled' as const,
  );
  return (await Promise.race([settled, sleep(ms).then(() => pending)])) === pending;
}

