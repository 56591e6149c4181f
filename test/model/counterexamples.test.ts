/**
 * Sequences the model-based test found and shrank, kept as named cases so the bug each one showed
 * stays fixed. Each runs exactly as the property ran it: both stores side by side, every answer
 * compared, and pending waits aborted at the end.
 */
import { describe, it } from 'vitest';
import { useStorePair } from '../support/differential.js';
import { useNoUnhandledErrors } from '../support/unhandled-errors.js';
import { LONG_TTL_MS, type Operation } from './operations.js';
import { runOperations } from './run-model.js';

useNoUnhandledErrors();
const stores = useStorePair({ defaultTtlMs: LONG_TTL_MS });

function counterexample(name: string, sequence: Operation[]): void {
  it(name, async () => {
    await runOperations(await stores.fresh(), sequence);
  });
}

describe('counterexamples found by the model', () => {
  // PostgreSQL rejected the waiter's promise while still marking the row awaited, before anything
  // awaited that promise: an unhandled rejection.
  counterexample('a wait aborted right after it started rejects with the reason, and nothing goes unhandled', [
    { op: 'createTask', input: { toolName: 'build' } },
    { op: 'waitForCompletion', task: { slot: 0 } },
  ]);
});
