/**
 * Model-based test: random sequences of every TaskStore operation run on PostgresTaskStore and on
 * MemoryTaskStore side by side, and every observable answer must agree (see run-model.ts).
 *
 * Each property runs MODEL_RUNS sequences (default 100) of up to 30 steps. For a long run:
 *
 *     MODEL_RUNS=20000 npx vitest run test/model
 *
 * A failure prints the seed, the path and the shrunk sequence; MODEL_SEED and MODEL_PATH replay it.
 * Turn the sequence into a named case in counterexamples.test.ts once the cause is fixed.
 */
import fc from 'fast-check';
import { describe, it } from 'vitest';
import { useStorePair, type PairOptions } from '../support/differential.js';
import { useNoUnhandledErrors } from '../support/unhandled-errors.js';
import { LONG_TTL_MS, operations } from './operations.js';
import { runOperations } from './run-model.js';

const RUNS = Number(process.env.MODEL_RUNS ?? 100);
/** Roughly 50 ms per sequence on a loaded 2-core machine, with room to spare. */
const TIMEOUT_MS = 60_000 + RUNS * 400;

useNoUnhandledErrors();

function modelProperty(name: string, options: PairOptions): void {
  describe(name, () => {
    const stores = useStorePair(options);
    it(
      `${RUNS} random sequences answer alike on both stores`,
      async () => {
        await fc.assert(
          fc.asyncProperty(operations, async (sequence) => {
            await runOperations(await stores.fresh(), sequence);
          }),
          {
            numRuns: RUNS,
            ...(process.env.MODEL_SEED === undefined ? {} : { seed: Number(process.env.MODEL_SEED) }),
            ...(process.env.MODEL_PATH === undefined ? {} : { path: process.env.MODEL_PATH }),
          },
        );
      },
      TIMEOUT_MS,
    );
  });
}

modelProperty('the default limits', { defaultTtlMs: LONG_TTL_MS });
modelProperty('tight limits: 300-byte payloads, 2 tasks per owner', {
  defaultTtlMs: LONG_TTL_MS,
  limits: { maxPayloadBytes: 300, maxTasksPerOwner: 2 },
});
