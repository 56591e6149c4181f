/**
 * Lifecycles per second (create → set status → complete → read result) of PostgresTaskStore,
 * MemoryTaskStore and pg-boss against the floor (the four raw `pg` statements a lifecycle needs),
 * at several concurrencies, in alternating rounds on one database. See docs/BENCHMARKS.md.
 *
 *   npm run bench                          (embedded PostgreSQL in a temp dir)
 *   DATABASE_URL=postgres://… npm run bench -- --rounds=7 --seconds=5
 */
import { runLifecycleBenchmark } from './bench/lifecycle.js';
import { onScriptDatabase } from './bench/on-database.js';
import { parseOptions } from './bench/options.js';

const options = parseOptions('npm run bench -- [options]', {
  concurrencies: [1, 16, 64],
  seconds: 3,
  rounds: 5,
  poolSize: 20,
  pgBoss: true,
  leaseRounds: 32,
});

await onScriptDatabase((url) => runLifecycleBenchmark(url, options));
