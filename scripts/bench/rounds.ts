/**
 * The round structure every comparison shares. Contenders run one after another in rounds, so that
 * drift on a shared machine hits all of them. Each round's rate is divided by the baseline's rate
 * in the same round; the median of those per-round ratios, with their spread, is what to read.
 *
 * A contender pays for some of the work of the one before it (autovacuum of its dead rows, a cold
 * cache), so the order alternates: a rotated order, then the same order reversed. Each contender
 * then follows each of its neighbours in turn; a rotation alone puts every contender after the
 * same other one in all but one round.
 */
import { median } from '../support.js';

export interface Contender {
  name: string;
  /** Runs the workload at `concurrency` for `seconds`; operations per second. */
  measure(concurrency: number, seconds: number): Promise<number>;
}

export interface Spread {
  median: number;
  min: number;
  max: number;
}

export interface ContenderRounds {
  name: string;
  /** Operations per second, one per round. */
  rates: number[];
  rate: Spread;
  /** rates[i] / baseline rates[i], one per round. */
  ratios: number[];
  ratio: Spread;
}

export function spread(values: number[]): Spread {
  return { median: median(values), min: Math.min(...values), max: Math.max(...values) };
}

/** `concurrency` loops of `operation` until `seconds` have passed; operations per second. */
export async function runLoops(operation: () => Promise<void>, concurrency: number, seconds: number): Promise<number> {
  const start = performance.now();
  const deadline = start + seconds * 1000;
  let done = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < deadline) {
        await operation();
        done += 1;
      }
    }),
  );
  return done / ((performance.now() - start) / 1000);
}

/** Round `round`'s order: rotated by half the round number, reversed in odd rounds. */
function roundOrder<T>(contenders: T[], round: number): T[] {
  const shift = Math.floor(round / 2);
  const rotated = contenders.map((_, i) => contenders[(i + shift) % contenders.length]!);
  return round % 2 === 0 ? rotated : rotated.reverse();
}

/**
 * Warms every contender up, then runs `rounds` rounds; the first contender is the baseline of the
 * ratios. `onRound` sees each round's rates as they come, for progress output.
 */
export async function alternatingRounds(
  contenders: Contender[],
  options: { concurrency: number; seconds: number; rounds: number; warmupSeconds: number },
  onRound?: (round: number, rates: Map<string, number>) => void,
): Promise<ContenderRounds[]> {
  const { concurrency, seconds, rounds, warmupSeconds } = options;
  for (const contender of contenders) await contender.measure(concurrency, warmupSeconds);
  const rates = new Map<string, number[]>(contenders.map(({ name }) => [name, []]));
  for (let round = 0; round < rounds; round++) {
    const order = roundOrder(contenders, round);
    const thisRound = new Map<string, number>();
    for (const contender of order) {
      const rate = await contender.measure(concurrency, seconds);
      rates.get(contender.name)!.push(rate);
      thisRound.set(contender.name, rate);
    }
    onRound?.(round, thisRound);
  }
  const baseline = rates.get(contenders[0]!.name)!;
  return contenders.map(({ name }) => {
    const own = rates.get(name)!;
    const ratios = own.map((rate, round) => rate / baseline[round]!);
    return { name, rates: own, rate: spread(own), ratios, ratio: spread(ratios) };
  });
}

/** `0.74 × (0.69–0.80)`: the median ratio and its spread over the rounds. */
export function formatRatio(ratio: Spread): string {
  return `${ratio.median.toFixed(2)} × (${ratio.min.toFixed(2)}–${ratio.max.toFixed(2)})`;
}
