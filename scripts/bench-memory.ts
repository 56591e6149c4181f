/**
 * Extra resident memory of one instance holding 10,000 pending waiters and 10,000 live tokens,
 * and the connections it uses meanwhile. See docs/BENCHMARKS.md.
 *
 *   npm run bench:memory                       (embedded PostgreSQL in a temp dir)
 *   DATABASE_URL=postgres://… npm run bench:memory -- --waiters=50000
 */
import { runMemoryBenchmark } from './bench/memory.js';
import { onScriptDatabase } from './bench/on-database.js';
import { parseOptions } from './bench/options.js';

const options = parseOptions('npm run bench:memory -- [options]', { waiters: 10_000, tokens: 10_000 });

await onScriptDatabase((url) => runMemoryBenchmark(url, options));
