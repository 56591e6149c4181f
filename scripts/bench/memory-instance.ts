/**
 * The instance the memory benchmark measures, in a fresh process started with --expose-gc (by
 * memory.ts through child-process.ts), so that nothing else lives in its heap.
 *
 * Request: { op: 'measure', connectionString, schema, waiters, tokens } → MemoryResult
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { PostgresTaskStore, type CancellationToken, type TaskSnapshot } from '../../src/index.js';
import { storeLifecycle } from '../support.js';
import { serveBenchRequests } from './child-process.js';
import type { MemoryResult } from './memory.js';

const APPLICATION_NAME = 'bench-memory-instance';
const MB = 1024 * 1024;

function settle(): { rss: number; heapUsed: number } {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run with --expose-gc');
  for (let i = 0; i < 4; i++) gc();
  const { rss, heapUsed } = process.memoryUsage();
  return { rss, heapUsed };
}

async function connectionsOf(admin: pg.Client): Promise<number> {
  const { rows } = await admin.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1',
    [APPLICATION_NAME],
  );
  return rows[0]!.n;
}

/** A waiter is registered once its task carries the flag that asks the settling commit to NOTIFY. */
async function allAwaited(admin: pg.Client, schema: string, ids: string[]): Promise<void> {
  for (;;) {
    const { rows } = await admin.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${schema}.tasks WHERE awaited AND task_id = ANY($1::text[])`,
      [ids],
    );
    if (rows[0]!.n === ids.length) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function inBatches(count: number, batch: number, work: (i: number) => Promise<void>): Promise<void> {
  for (let first = 0; first < count; first += batch) {
    await Promise.all(Array.from({ length: Math.min(batch, count - first) }, (_, k) => work(first + k)));
  }
}

interface Held {
  woken: Promise<TaskSnapshot | null>[];
  tokens: CancellationToken[];
  waitedIds: string[];
  registerSeconds: number;
}

/** Begins `waiterCount` waits on tasks another instance created (plain SQL) and creates `tokenCount` tasks. */
async function hold(admin: pg.Client, store: PostgresTaskStore, schema: string, waiterCount: number, tokenCount: number): Promise<Held> {
  // The waiters wait on tasks another instance created, so they hold no tokens.
  const waitedIds = Array.from({ length: waiterCount }, () => randomBytes(16).toString('hex'));
  await admin.query(
    `INSERT INTO ${schema}.tasks (task_id, tool_name, arguments, status, status_message, created_at, last_updated_at, ttl_ms, expires_at)
     SELECT id, 'memory', '{}', 'working', 'Task started', now(), now(), 600000, now() + interval '10 minutes'
       FROM unnest($1::text[]) AS id`,
    [waitedIds],
  );
  const startedAt = performance.now();
  const woken = waitedIds.map((id) => store.waitForCompletion(id));
  await allAwaited(admin, schema, waitedIds);
  const registerSeconds = (performance.now() - startedAt) / 1000;
  const tokens: CancellationToken[] = [];
  await inBatches(tokenCount, 16, async () => {
    tokens.push((await store.createTask({ toolName: 'memory', arguments: { n: 1 } })).token);
  });
  return { woken, tokens, waitedIds, registerSeconds };
}

/** Settles every waited task in one statement; resolves with the time until the last waiter woke. */
async function release(admin: pg.Client, store: PostgresTaskStore, schema: string, held: Held): Promise<number> {
  const startedAt = performance.now();
  await admin.query(
    `UPDATE ${schema}.tasks SET previous_status = status, status = 'completed', status_message = 'done',
            result = '{"content": []}', last_updated_at = now()
      WHERE task_id = ANY($1::text[])`,
    [held.waitedIds],
  );
  const snapshots = await Promise.all(held.woken);
  const wakeAllSeconds = (performance.now() - startedAt) / 1000;
  if (snapshots.some((snapshot) => snapshot?.task.status !== 'completed')) throw new Error('a waiter woke without its result');
  if (held.tokens.some((token) => token.isCancelled)) throw new Error('a token was raised');
  // The tokens' tasks go too, so the store lets go of them: what is left is the instance itself.
  await admin.query(`DELETE FROM ${schema}.tasks WHERE tool_name = 'memory'`);
  await store.listTasks(); // a round trip, by which the deletions' NOTIFYs have been handled
  return wakeAllSeconds;
}

async function measure(connectionString: string, schema: string, waiterCount: number, tokenCount: number): Promise<MemoryResult> {
  const admin = new pg.Client({ connectionString });
  await admin.connect();
  const pool = new pg.Pool({ connectionString, max: 10, application_name: APPLICATION_NAME });
  pool.on('error', () => {});
  const store = new PostgresTaskStore({ pool, schema, reaper: false });
  try {
    // Warm up with the measured load itself, then let go of it: compiled code, caches and the heap
    // V8 grew for the load count as the baseline, as in a server that has been serving a while, so
    // the figure is what holding the waiters and tokens costs.
    for (let i = 0; i < 50; i++) await storeLifecycle(store);
    await release(admin, store, schema, await hold(admin, store, schema, waiterCount, tokenCount));
    const before = settle();
    const connectionsBefore = await connectionsOf(admin);

    const held = await hold(admin, store, schema, waiterCount, tokenCount);
    const holding = settle();
    const connectionsHolding = await connectionsOf(admin);
    const poolConnections = pool.totalCount;
    const wakeAllSeconds = await release(admin, store, schema, held);

    return {
      waiters: waiterCount,
      tokens: tokenCount,
      extraRssMb: (holding.rss - before.rss) / MB,
      extraHeapMb: (holding.heapUsed - before.heapUsed) / MB,
      baselineRssMb: before.rss / MB,
      connectionsIdle: connectionsBefore,
      connectionsHolding,
      poolConnections,
      listenerConnections: store.listenerState === 'listening' ? 1 : 0,
      registerSeconds: held.registerSeconds,
      wakeAllSeconds,
    };
  } finally {
    await store.close();
    await pool.end();
    await admin.end();
  }
}

serveBenchRequests(async (message) => {
  if (message.op === 'close') return {};
  if (message.op !== 'measure') throw new Error(`unknown request ${String(message.op)}`);
  return measure(String(message.connectionString), String(message.schema), Number(message.waiters), Number(message.tokens));
});
