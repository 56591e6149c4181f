/**
 * How getTask, completeTask and listTasks pages cost with 1,000 and 1,000,000 tasks in the table
 * (and 10,000,000 with --tenMillion), as ratios to the smallest size in the same run. The tables
 * are bulk-loaded with SQL with a realistic mix. See docs/BENCHMARKS.md.
 *
 *   npm run bench:growth                       (embedded PostgreSQL in a temp dir)
 *   DATABASE_URL=postgres://… npm run bench:growth -- --tenMillion
 */
import { runGrowthBenchmark } from './bench/growth.js';
import { onScriptDatabase } from './bench/on-database.js';
import { parseOptions } from './bench/options.js';

const options = parseOptions('npm run bench:growth -- [options]', {
  sizes: [1_000, 1_000_000],
  tenMillion: false,
  rounds: 5,
  operations: 200,
});

const sizes = options.tenMillion ? [...options.sizes, 10_000_000] : options.sizes;
await onScriptDatabase((url) => runGrowthBenchmark(url, { sizes, rounds: options.rounds, operations: options.operations }));
