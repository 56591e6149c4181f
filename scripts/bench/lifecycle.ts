/**
 * Lifecycle throughput: one task's life as a tool call drives it (create → set status → complete
 * → read the result), as many as possible in `seconds`, at each concurrency, for four contenders
 * in alternating rounds on one database:
 *
 * - the floor: the four raw `pg` statements a lifecycle needs, on a one-table schema;
 * - PostgresTaskStore, listener on (the default configuration);
 * - PostgresTaskStore with every task leased, as the MCP integrations run them, its heartbeat
 *   renewing 1,000 other leased tasks every second meanwhile (ten times the default rate);
 * - MemoryTaskStore, in process (a fresh store per measurement, so its map stays one round long);
 * - pg-boss 12 (send → fetch → complete → getJobById), in a Node 22 child process with a pool of
 *   the same size.
 *
 * Every rate is divided by the floor's rate of the same round. Apart from the rounds, the cost of
 * the heartbeat itself: statements per second and the time of one renewal of 1,000 leases; and
 * the cost of leasing, the two PostgresTaskStore contenders alone in many short rounds at
 * concurrency 16: they differ by a few per cent, which five rounds among five contenders cannot
 * resolve on a shared machine.
 */
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { MemoryTaskStore, migrate, PostgresTaskStore } from '../../src/index.js';
import { scriptPool, storeLifecycle } from '../support.js';
import { startBenchChild, type BenchChild } from './child-process.js';
import { alternatingRounds, formatRatio, runLoops, type Contender, type ContenderRounds, type Spread } from './rounds.js';

export interface LifecycleOptions {
  concurrencies: number[];
  seconds: number;
  rounds: number;
  poolSize: number;
  /** pg-boss needs Node 22 from the `node` npm package; off, the run has three contenders. */
  pgBoss: boolean;
  /** Rounds of half `seconds` comparing the leased store with the unleased one alone; 0 leaves it out. */
  leaseRounds: number;
}

export interface LifecycleResult {
  options: LifecycleOptions;
  pgBossVersion: string | null;
  byConcurrency: { concurrency: number; contenders: ContenderRounds[] }[];
  heartbeat?: HeartbeatCost;
  leaseCost?: LeaseCost;
}

/** Leased / unleased store, the two alone in alternating rounds. */
export interface LeaseCost {
  concurrency: number;
  seconds: number;
  ratios: number[];
  ratio: Spread;
}

export interface HeartbeatCost {
  leasedTasks: number;
  heartbeatMs: number;
  /** Heartbeat statements sent per second, counted as the store sends them. */
  statementsPerSecond: number;
  /** Lease rows renewed per second. */
  renewalsPerSecond: number;
  /** The store's heartbeat statement renewing every lease, replayed: median of the timed runs. */
  renewMs: number;
}

export const FLOOR = 'floor (raw pg)';
export const POSTGRES_STORE = 'PostgresTaskStore';
export const LEASED_STORE = 'PostgresTaskStore, leased';
export const MEMORY_STORE = 'MemoryTaskStore';
export const PG_BOSS = 'pg-boss';

const SCHEMAS = { floor: 'bench_floor', store: 'bench_store', pgBoss: 'bench_pgboss' };
const HELD_LEASES = 1_000;
const BENCH_HEARTBEAT_MS = 1_000;
/** Where the lease target is read. */
const LEASE_COST_CONCURRENCY = 16;
const PG_BOSS_SCRIPT = fileURLToPath(new URL('./pg-boss-contender.ts', import.meta.url));

export function floorLifecycle(pool: pg.Pool): () => Promise<void> {
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

export async function createFloorSchema(pool: pg.Pool): Promise<void> {
  await pool.query(`
    DROP SCHEMA IF EXISTS bench_floor CASCADE;
    CREATE SCHEMA bench_floor;
    CREATE TABLE bench_floor.tasks (
      id text PRIMARY KEY, tool_name text NOT NULL, arguments jsonb NOT NULL, status text NOT NULL,
      status_message text, created_at timestamptz NOT NULL, last_updated_at timestamptz NOT NULL,
      expires_at timestamptz, result jsonb);`);
}

/** The memory store's limits would refuse a round's worth of tasks; here they bound nothing. */
function memoryContender(): Contender {
  return {
    name: MEMORY_STORE,
    async measure(concurrency, seconds) {
      const store = new MemoryTaskStore({ limits: { maxTasks: 1e9, maxRetainedBytes: 2 ** 50 } });
      try {
        return await runLoops(() => storeLifecycle(store), concurrency, seconds);
      } finally {
        await store.close();
      }
    },
  };
}

async function pgBossContender(connectionString: string, poolSize: number): Promise<{ contender: Contender; child: BenchChild; version: string }> {
  const child = startBenchChild(PG_BOSS_SCRIPT, { node: 'node22' });
  const { version } = await child.request<{ version: string }>({ op: 'start', connectionString, schema: SCHEMAS.pgBoss, poolSize });
  return {
    child,
    version,
    contender: {
      name: PG_BOSS,
      measure: async (concurrency, seconds) => (await child.request<{ rate: number }>({ op: 'measure', concurrency, seconds })).rate,
    },
  };
}

export async function runLifecycleBenchmark(connectionString: string, options: LifecycleOptions): Promise<LifecycleResult> {
  const floorPool = scriptPool(connectionString, options.poolSize);
  const storePool = scriptPool(connectionString, options.poolSize);
  await createFloorSchema(floorPool);
  await floorPool.query(`DROP SCHEMA IF EXISTS ${SCHEMAS.store} CASCADE; DROP SCHEMA IF EXISTS ${SCHEMAS.pgBoss} CASCADE`);
  await migrate({ pool: floorPool, schema: SCHEMAS.store });
  const store = new PostgresTaskStore({ pool: storePool, schema: SCHEMAS.store, reaper: false });
  const leasedPool = scriptPool(connectionString, options.poolSize);
  const leased = new PostgresTaskStore({
    pool: leasedPool,
    schema: SCHEMAS.store,
    reaper: false,
    leases: { heartbeatMs: BENCH_HEARTBEAT_MS, leaseMs: 10 * BENCH_HEARTBEAT_MS },
  });
  for (let i = 0; i < HELD_LEASES; i++) await leased.leases.createLeasedTask({ toolName: 'held', ttlMs: 3_600_000 });
  // Enough beats to count at full size; two seconds for the trial presets.
  const heartbeat = await measureHeartbeat(connectionString, Math.max(2, options.seconds * 3));
  const pgBoss = options.pgBoss ? await pgBossContender(connectionString, options.poolSize) : null;
  const floor = floorLifecycle(floorPool);
  const unleasedStore: Contender = {
    name: POSTGRES_STORE,
    measure: (concurrency, seconds) => runLoops(() => storeLifecycle(store), concurrency, seconds),
  };
  const leasedStore: Contender = {
    name: LEASED_STORE,
    measure: (concurrency, seconds) => runLoops(() => storeLifecycle(leased, (input) => leased.leases.createLeasedTask(input)), concurrency, seconds),
  };
  const contenders: Contender[] = [
    { name: FLOOR, measure: (concurrency, seconds) => runLoops(floor, concurrency, seconds) },
    unleasedStore,
    leasedStore,
    memoryContender(),
    ...(pgBoss ? [pgBoss.contender] : []),
  ];

  try {
    console.log(
      `lifecycles (create → set status → complete → read result): ${options.rounds} rounds of ${options.seconds} s ` +
        `per contender and concurrency, alternating; pools of ${options.poolSize}` +
        (pgBoss ? `; pg-boss ${pgBoss.version} on Node 22` : '; pg-boss left out'),
    );
    const byConcurrency: LifecycleResult['byConcurrency'] = [];
    for (const concurrency of options.concurrencies) {
      const results = await alternatingRounds(
        contenders,
        { concurrency, seconds: options.seconds, rounds: options.rounds, warmupSeconds: Math.min(1, options.seconds) },
        (round, rates) =>
          console.log(
            `  concurrency ${concurrency}, round ${round + 1}: ` +
              [...rates].map(([name, rate]) => `${name} ${rate.toFixed(0)}/s`).join(', '),
          ),
      );
      byConcurrency.push({ concurrency, contenders: results });
      console.log(`concurrency ${concurrency}`);
      for (const result of results) {
        console.log(`  ${result.name.padEnd(18)} ${result.rate.median.toFixed(0).padStart(7)} lifecycles/s   ${formatRatio(result.ratio)} floor`);
      }
    }
    const leaseCost = options.leaseRounds > 0 ? await measureLeaseCost([unleasedStore, leasedStore], options) : undefined;
    return { options, pgBossVersion: pgBoss?.version ?? null, byConcurrency, heartbeat, ...(leaseCost ? { leaseCost } : {}) };
  } finally {
    await pgBoss?.child.close();
    await Promise.all([store.close(), leased.close()]);
    await floorPool.query(`DROP SCHEMA ${SCHEMAS.floor} CASCADE; DROP SCHEMA ${SCHEMAS.store} CASCADE; DROP SCHEMA IF EXISTS ${SCHEMAS.pgBoss} CASCADE`);
    await Promise.all([floorPool.end(), storePool.end(), leasedPool.end()]);
  }
}

interface SentStatement {
  text: string;
  values: unknown[];
  /** performance.now() when it was sent. */
  at: number;
}

/** Records every heartbeat statement (src/postgres/lease-statements.ts, beat) this process sends until stopped. */
function watchHeartbeats(): { sent: SentStatement[]; stop(): void } {
  const query = pg.Client.prototype.query as (...args: unknown[]) => unknown;
  const sent: SentStatement[] = [];
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    // The store sends a named pg.Query, or a text and its values.
    const [first, second] = args as [string | { text?: string; values?: unknown[] }, unknown[] | undefined];
    const text = typeof first === 'string' ? first : first.text;
    if (text?.includes('INSERT INTO') && text.includes('lease_runners')) {
      sent.push({ text, values: (typeof first === 'string' ? second : first.values) ?? [], at: performance.now() });
    }
    return query.apply(this, args);
  } as typeof pg.Client.prototype.query;
  return { sent, stop: () => void (pg.Client.prototype.query = query as typeof pg.Client.prototype.query) };
}

async function measureLeaseCost(stores: [unleased: Contender, leased: Contender], options: LifecycleOptions): Promise<LeaseCost> {
  const concurrency = LEASE_COST_CONCURRENCY;
  const seconds = options.seconds / 2;
  const [, leased] = await alternatingRounds(stores, { concurrency, seconds, rounds: options.leaseRounds, warmupSeconds: seconds });
  console.log(
    `leased / unleased store alone, ${options.leaseRounds} rounds of ${seconds} s at concurrency ${concurrency}: ` +
      `${formatRatio(leased!.ratio)} (per round ${leased!.ratios.map((r) => r.toFixed(2)).join(' ')})`,
  );
  return { concurrency, seconds, ratios: leased!.ratios, ratio: leased!.ratio };
}

/**
 * The instance holding {@link HELD_LEASES} leases and doing nothing else: the heartbeat statements
 * it sends per second over a few beats, then its last one replayed and timed (each is a full beat
 * of all its leases, which its answer names).
 */
async function measureHeartbeat(connectionString: string, seconds: number): Promise<HeartbeatCost> {
  const probe = scriptPool(connectionString, 1);
  try {
    const watch = watchHeartbeats();
    const started = performance.now();
    const elapsed = () => performance.now() - started;
    // Three beats at least, so that two intervals are timed.
    try {
      while (watch.sent.length < 3 || elapsed() < seconds * 1000) {
        if (elapsed() > seconds * 1000 + 20 * BENCH_HEARTBEAT_MS) throw new Error(`${watch.sent.length} heartbeats in ${elapsed().toFixed(0)} ms`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    } finally {
      watch.stop();
    }
    const { sent } = watch;
    const beat = sent.at(-1)!;
    const statementsPerSecond = (sent.length - 1) / ((beat.at - sent[0]!.at) / 1000);
    const times: number[] = [];
    let renewed = 0;
    for (let i = 0; i < 20; i++) {
      const started = performance.now();
      renewed = (await probe.query<{ task_ids: string[] }>(beat.text, beat.values)).rows[0]!.task_ids.length;
      times.push(performance.now() - started);
    }
    times.sort((a, b) => a - b);
    const renewalsPerSecond = statementsPerSecond * renewed;
    const cost = { leasedTasks: renewed, heartbeatMs: BENCH_HEARTBEAT_MS, statementsPerSecond, renewalsPerSecond, renewMs: times[10]! };
    console.log(
      `heartbeat: ${renewed} leased tasks, a beat every ${BENCH_HEARTBEAT_MS} ms: ${statementsPerSecond.toFixed(2)} statements/s, ` +
        `${renewalsPerSecond.toFixed(0)} lease renewals/s, ${cost.renewMs.toFixed(1)} ms per beat of all ${renewed}`,
    );
    return cost;
  } finally {
    await probe.end();
  }
}
