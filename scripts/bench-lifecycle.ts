/**
 * Lifecycles per second (create → set status → complete → read result) of PostgresTaskStore
 * against the floor: the four raw `pg` statements a lifecycle needs on a one-table schema, in the
 * same database, so the durability is the same. Rounds alternate between the contenders so that
 * noise on a shared machine hits both; the ratios are what to read.
 *
 *   npm run bench                        (embedded PostgreSQL in a temp dir)
 *   DATABASE_URL=postgres://… npm run bench
 *
 * Options: --seconds=N per round (default 3), --rounds=N (default 5). Prints the median round.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { migrate, PostgresTaskStore } from '../src/index.js';
import { median, parseArgs, scriptPool, storeLifecycle } from './support.js';
import { openScriptDatabase } from './database.js';

const { seconds: SECONDS, rounds: ROUNDS } = parseArgs({ seconds: 3, rounds: 5 });
const CONCURRENCIES = [1, 16];
const POOL_SIZE = 20;

type Lifecycle = () => Promise<void>;

function floorLifecycle(pool: pg.Pool): Lifecycle {
  return async () => {
    const id = randomBytes(16).toString('hex');
    await pool.query(
      `INSERT INTO bench_floor.tasks (id, tool_name, arguments, status, status_message, created_at, last_updated_at, expires_at)
       VALUES ($1, 'bench', $2, 'working', 'Task started', now(), now(), now() + interval '5 minutes')`,
      [id, JSON.stringify({ n: 1 })],
    );
    await pool.query(
      `UPDATE bench_floor.tasks SET status = 'working', status_message = $2, last_updated_at = now() WHERE id = $1`,
      [id, 'step 1 of 1'],
    );
    await pool.query(
      `UPDATE bench_floor.tasks SET status = 'completed', status_message = 'Task completed', result = $2, last_updated_at = now() WHERE id = $1`,
      [id, JSON.stringify({ content: [{ type: 'text', text: 'done' }] })],
    );
    const { rows } = await pool.query('SELECT status, result FROM bench_floor.tasks WHERE id = $1', [id]);
    if (!rows[0]?.result) throw new Error('lost a result');
  };
}

/** Runs `concurrency` loops of `lifecycle` for `seconds`; returns lifecycles per second. */
async function measure(lifecycle: Lifecycle, concurrency: number, seconds: number): Promise<number> {
  const deadline = performance.now() + seconds * 1000;
  let done = 0;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < deadline) {
        await lifecycle();
        done += 1;
      }
    }),
  );
  return done / ((performance.now() - start) / 1000);
}

async function main(): Promise<void> {
  const database = await openScriptDatabase();
  console.log(`database: ${database.description}`);
  const pools = { floor: scriptPool(database.connectionString, POOL_SIZE) };
  await pools.floor.query(`
    DROP SCHEMA IF EXISTS bench_floor CASCADE;
    CREATE SCHEMA bench_floor;
    CREATE TABLE bench_floor.tasks (
      id text PRIMARY KEY, tool_name text NOT NULL, arguments jsonb NOT NULL, status text NOT NULL,
      status_message text, created_at timestamptz NOT NULL, last_updated_at timestamptz NOT NULL,
      expires_at timestamptz, result jsonb);`);
  // Each contender writes to tables of its own, so none inherits another's dead rows.
  for (const schema of ['bench_listening', 'bench_poll_only']) {
    await pools.floor.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await migrate({ connectionString: database.connectionString, schema });
  }
  const storePools = [1, 2].map(() => scriptPool(database.connectionString, POOL_SIZE));
  const stores = {
    listening: new PostgresTaskStore({ pool: storePools[0], schema: 'bench_listening', reaper: false }),
    pollOnly: new PostgresTaskStore({ pool: storePools[1], schema: 'bench_poll_only', reaper: false, listen: false }),
  };

  const contenders: [string, Lifecycle][] = [
    ['floor (raw pg)', floorLifecycle(pools.floor)],
    ['store, listener on', () => storeLifecycle(stores.listening)],
    ['store, poll-only', () => storeLifecycle(stores.pollOnly)],
  ];
  console.log(`${ROUNDS} rounds of ${SECONDS}s per contender and concurrency, alternating\n`);
  for (const concurrency of CONCURRENCIES) {
    // Warm up every pool and plan cache before measuring.
    for (const [, lifecycle] of contenders) await measure(lifecycle, concurrency, 0.5);
    const totals = new Map<string, number[]>(contenders.map(([name]) => [name, []]));
    for (let round = 0; round < ROUNDS; round++) {
      // Rotate the order, so that no contender always runs right after the same other one.
      const order = contenders.map((_, i) => contenders[(i + round) % contenders.length]!);
      for (const [name, lifecycle] of order) totals.get(name)!.push(await measure(lifecycle, concurrency, SECONDS));
    }
    // Each round's rate is divided by the floor's rate of the same round, then the median is taken:
    // drift on a shared machine moves both sides of a ratio together.
    const floorRates = totals.get(contenders[0]![0])!;
    console.log(`concurrency ${concurrency}`);
    for (const [name, rates] of totals) {
      const ratio = median(rates.map((rate, round) => rate / floorRates[round]!));
      console.log(`  ${name.padEnd(20)} ${median(rates).toFixed(0).padStart(6)} lifecycles/s   ${ratio.toFixed(2)} × floor`);
    }
  }
  await Promise.all([stores.listening.close(), stores.pollOnly.close()]);
  for (const schema of ['bench_floor', 'bench_listening', 'bench_poll_only']) {
    await pools.floor.query(`DROP SCHEMA ${schema} CASCADE`);
  }
  await Promise.all([pools.floor, ...storePools].map((pool) => pool.end()));
  await database.stop();
}

await main();
