/**
 * Through MCP (SDK 1.x over Streamable HTTP): task-augmented tool calls per second on the server
 * `npm start` runs (PostgreSQL) against the same tools on the SDK's InMemoryTaskStore, and the
 * latency from a task settling to its `tasks/result` answering: ours across two instances, the
 * in-memory store polling on one. See docs/BENCHMARKS.md.
 *
 *   npm run bench:mcp                          (embedded PostgreSQL in a temp dir)
 *   DATABASE_URL=postgres://… npm run bench:mcp -- --tasks=100 --pollIntervalMs=1000
 */
import { runMcpBenchmark } from './bench/mcp.js';
import { onScriptDatabase } from './bench/on-database.js';
import { parseOptions } from './bench/options.js';

const options = parseOptions('npm run bench:mcp -- [options]', {
  concurrencies: [1, 16],
  seconds: 3,
  rounds: 5,
  tasks: 200,
  latencyConcurrency: 4,
  pollIntervalMs: 1000,
});

await onScriptDatabase((url) => runMcpBenchmark(url, options));
