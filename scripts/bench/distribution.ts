/** A latency distribution as results.json keeps it: the headline percentiles and a curve to draw. */
import { percentile } from '../support.js';

export interface Distribution {
  count: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  /** The 0th, 1st, …, 100th percentiles, in ms: enough to draw the distribution. */
  percentiles: number[];
}

export function distribution(samples: number[]): Distribution {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (p: number) => percentile(sorted, p);
  return {
    count: samples.length,
    p50: at(50),
    p90: at(90),
    p99: at(99),
    max: sorted[sorted.length - 1] ?? NaN,
    percentiles: Array.from({ length: 101 }, (_, p) => (p === 0 ? (sorted[0] ?? NaN) : at(p))),
  };
}

export function formatDistribution(d: Distribution): string {
  const ms = (value: number) => `${value.toFixed(2)} ms`.padStart(10);
  return `p50 ${ms(d.p50)}   p90 ${ms(d.p90)}   p99 ${ms(d.p99)}   max ${ms(d.max)}   (${d.count} samples)`;
}
