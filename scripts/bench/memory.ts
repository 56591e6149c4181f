/**
 * What one PostgresTaskStore instance costs in memory and connections while it holds pending
 * `waitForCompletion` calls and live cancellation tokens: the instance runs in a fresh Node
 * process (memory-instance.ts) that reads its resident memory after a full GC, before and while
 * holding them, then settles every waited task in one SQL statement and times the wake.
 */
import { fileURLToPath } from 'node:url';
import { migrate } from '../../src/index.js';
import { scriptPool } from '../support.js';
import { startBenchChild } from './child-process.js';

export interface MemoryOptions {
  waiters: number;
  tokens: number;
}

export interface MemoryResult {
  waiters: number;
  tokens: number;
  /** Resident memory while holding them, over the instance warmed up with the same load and released, after a full GC. */
  extraRssMb: number;
  extraHeapMb: number;
  baselineRssMb: number;
  /** Connections of the instance in pg_stat_activity: warmed up and idle, then while holding. */
  connectionsIdle: number;
  connectionsHolding: number;
  /** The pool's own count of open connections while holding. */
  poolConnections: number;
  listenerConnections: number;
  /** From the first waitForCompletion call to the last waiter registered in the database. */
  registerSeconds: number;
  /** From the one UPDATE that settles every waited task to the last waiter resolving. */
  wakeAllSeconds: number;
}

const SCHEMA = 'bench_memory';
const INSTANCE_SCRIPT = fileURLToPath(new URL('./memory-instance.ts', import.meta.url));

export async function runMemoryBenchmark(connectionString: string, options: MemoryOptions): Promise<MemoryResult> {
  const admin = scriptPool(connectionString, 1);
  await admin.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
  await migrate({ pool: admin, schema: SCHEMA });
  const instance = startBenchChild(INSTANCE_SCRIPT, { node: 'current', nodeFlags: ['--expose-gc'] });
  try {
    console.log(`memory: one instance holding ${options.waiters} pending waiters and ${options.tokens} live tokens`);
    const result = await instance.request<MemoryResult>({ op: 'measure', connectionString, schema: SCHEMA, ...options });
    console.log(
      `  extra resident memory ${result.extraRssMb.toFixed(1)} MB (heap ${result.extraHeapMb.toFixed(1)} MB) ` +
        `over a warmed-up instance of ${result.baselineRssMb.toFixed(0)} MB`,
    );
    console.log(
      `  connections: ${result.connectionsIdle} idle, ${result.connectionsHolding} while holding ` +
        `(pool ${result.poolConnections}, listener ${result.listenerConnections}); ` +
        `${result.waiters} waiters registered in ${result.registerSeconds.toFixed(2)} s and woke ${result.wakeAllSeconds.toFixed(2)} s after one UPDATE settled their tasks`,
    );
    return result;
  } finally {
    await instance.close();
    await admin.query(`DROP SCHEMA ${SCHEMA} CASCADE`);
    await admin.end();
  }
}
