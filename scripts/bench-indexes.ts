/**
 * Each index of the hot tables at 1,000,000 tasks: its size, the calls whose plans read it
 * (`EXPLAIN (ANALYZE, BUFFERS)` of the statements they send, on the loaded data), and what it costs
 * every created task. See bench/findings.md.
 *
 *   npm run bench:indexes                      (embedded PostgreSQL in a temp dir)
 *   DATABASE_URL=postgres://… npm run bench:indexes -- --tasks=1000000 --rounds=5
 */
import { runIndexBenchmark } from './bench/indexes.js';
import { onScriptDatabase } from './bench/on-database.js';
import { parseOptions } from './bench/options.js';

const options = parseOptions('npm run bench:indexes -- [options]', { tasks: 1_000_000, rounds: 5, inserts: 2_000 });

await onScriptDatabase((url) => runIndexBenchmark(url, options));
