/**
 * How long after a completion commits does a waiter on another instance wake (LISTEN/NOTIFY),
 * beside polling at the MCP SDK's default 1 s interval. See docs/BENCHMARKS.md.
 *
 *   npm run bench:latency                       (embedded PostgreSQL in a temp dir)
 *   DATABASE_URL=postgres://… npm run bench:latency -- --tasks=2000
 */
import { onScriptDatabase } from './bench/on-database.js';
import { parseOptions } from './bench/options.js';
import { runWakeBenchmark } from './bench/wake-latency.js';

const options = parseOptions('npm run bench:latency -- [options]', { tasks: 1000, pollers: 200 });

await onScriptDatabase((url) => runWakeBenchmark(url, options));
