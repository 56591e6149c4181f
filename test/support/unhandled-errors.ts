/**
 * Fails the test during which the process saw an unhandled rejection or an uncaught exception
 * (an unhandled 'error' event is one), naming it. Vitest fails the run for these anyway (see
 * test/harness/unhandled-errors.test.ts); this pins the failure on the test that caused it. Set
 * UNHANDLED_STACKS=1 to see their stacks.
 */
import { afterAll, afterEach, beforeAll, expect } from 'vitest';

export function useNoUnhandledErrors(): void {
  const seen: string[] = [];
  const onRejection = (reason: unknown) => seen.push(`unhandled rejection: ${describe(reason)}`);
  const onException = (error: unknown) => seen.push(`uncaught exception: ${describe(error)}`);
  beforeAll(() => {
    process.on('unhandledRejection', onRejection);
    process.on('uncaughtException', onException);
  });
  afterEach(async () => {
    // A rejection is reported once the microtask queue drains after it; let that happen.
    await new Promise((resolve) => setImmediate(resolve));
    expect(seen.splice(0), 'the process saw errors nobody handled').toStrictEqual([]);
  });
  afterAll(() => {
    process.off('unhandledRejection', onRejection);
    process.off('uncaughtException', onException);
  });
}

/** The error's name and message; its stack too when UNHANDLED_STACKS is set. */
function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  return process.env.UNHANDLED_STACKS ? String(error.stack) : `${error.name}: ${error.message}`;
}
