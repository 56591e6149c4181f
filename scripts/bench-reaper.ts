/**
 * The reaper's rows per second on a backlog of expired tasks (1,000,000 by default), and the p99
 * of live lifecycles while it drains, against the same p99 with no reaper running. See
 * docs/BENCHMARKS.md.
 *
 *   npm run bench:reaper                       (embedded PostgreSQL in a temp dir)
 *   DATABASE_URL=postgres://… npm run bench:reaper -- --rows=200000
 */
import { onScriptDatabase } from './bench/on-database.js';
import { parseOptions } from './bench/options.js';
import { runReaperBenchmark } from './bench/reaper.js';

const options = parseOptions('npm run bench:reaper -- [options]', { rows: 1_000_000, pacings: [0, 1], seconds: 5, concurrency: 4 });

await onScriptDatabase((url) => runReaperBenchmark(url, options));
