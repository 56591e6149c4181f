/**
 * Does the reaper stay out of live traffic's way? Loads a backlog of expired tasks, then measures
 * the latency of live task lifecycles (create → set status → complete → read result) twice: with
 * no reaper running, and while a second store instance's reapExpired() drains the backlog. A
 * third round after the reap shows how much the machine drifted meanwhile.
 *
 *   npm run bench:reaper                       (embedded PostgreSQL in a temp dir)
 *   DATABASE_URL=postgres://… npm run bench:reaper
 *
 * Options: --rows=N expired tasks (default 200000), --seconds=N per baseline round (default 5),
 * --concurrency=N live lifecycles in flight (default 4).
 */
import pg from 'pg';
import { migrate, PostgresTaskStore } from '../src/index.js';
import { parseArgs, percentile, scriptPool, sleep, storeLifecycle } from './support.js';
import { openScriptDatabase } from './database.js';

const { rows: ROWS, seconds: SECONDS, concurrency: CONCURRENCY } = parseArgs({ rows: 200_000, seconds: 5, concurrency: 4 });
const SCHEMA = 'bench_reaper';
const INSERT_CHUNK = 50_000;

interface Latencies {
  count: number;
  p50: number;
  p99: number;
  max: number;
}

/** Runs `CONCURRENCY` loops of lifecycles until `until` resolves; returns their latencies in ms. */
async function measure(store: PostgresTaskStore, until: Promise<unknown>): Promise<Latencies> {
  let stop = false;
  void until.finally(() => (stop = true));
  const samples: number[] = [];
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (!stop) {
        const startedAt = performance.now();
        await storeLifecycle(store);
        samples.push(performance.now() - startedAt);
      }
    }),
  );
  return { count: samples.length, p50: percentile(samples, 50), p99: percentile(samples, 99), max: percentile(samples, 100) };
}

const seconds = (s: number) => sleep(s * 1000);

/** Inserts `rows` valid tasks that expired a moment ago, in a few set-based statements. */
async function loadExpiredTasks(pool: pg.Pool, rows: number): Promise<void> {
  for (let first = 1; first <= rows; first += INSERT_CHUNK) {
    const last = Math.min(rows, first + INSERT_CHUNK - 1);
    // Created a minute ago with a 1 s ttl: expired, and well inside the default 5 min tombstone
    // retention, so the reap measured is tombstoning alone.
    await pool.query(
      `INSERT INTO ${SCHEMA}.tasks
         (task_id, owner, tool_name, arguments, status, status_message,
          created_at, last_updated_at, ttl_ms, expires_at)
       SELECT md5(random()::text || i), 'owner-' || (i % 100), 'bulk', jsonb_build_object('i', i, 'payload', repeat('x', 64)),
              'working', 'Task started', now() - interval '60 seconds', now() - interval '60 seconds', 1000,
              now() - interval '59 seconds'
         FROM generate_series($1::int, $2::int) AS i`,
      [first, last],
    );
  }
}

function row(name: string, l: Latencies): string {
  const ms = (value: number) => `${value.toFixed(2)} ms`.padStart(10);
  return `  ${name.padEnd(22)} ${String(l.count).padStart(7)} lifecycles   p50 ${ms(l.p50)}   p99 ${ms(l.p99)}   max ${ms(l.max)}`;
}

async function main(): Promise<void> {
  const database = await openScriptDatabase();
  console.log(`database: ${database.description}`);
  const admin = scriptPool(database.connectionString, 2);
  const { rows: version } = await admin.query<{ v: string }>(`SELECT current_setting('server_version') AS v`);
  console.log(`PostgreSQL ${version[0]!.v}; ${ROWS} expired tasks; ${CONCURRENCY} live lifecycles in flight\n`);

  await admin.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
  await migrate({ pool: admin, schema: SCHEMA });
  let startedAt = performance.now();
  await loadExpiredTasks(admin, ROWS);
  await admin.query(`VACUUM ANALYZE ${SCHEMA}.tasks`);
  console.log(`loaded ${ROWS} expired tasks in ${((performance.now() - startedAt) / 1000).toFixed(1)} s`);

  // Separate pools, as two application servers would have.
  const livePool = scriptPool(database.connectionString, 10);
  const reaperPool = scriptPool(database.connectionString, 2);
  const live = new PostgresTaskStore({ pool: livePool, schema: SCHEMA, reaper: false });
  // reaper: false so nothing runs before we ask; reapExpired() uses the default batch size.
  const reaper = new PostgresTaskStore({ pool: reaperPool, schema: SCHEMA, reaper: false });

  await measure(live, seconds(1)); // warm-up: connections, plan caches
  const before = await measure(live, seconds(SECONDS));

  let tombstoned = 0;
  let passes = 0;
  startedAt = performance.now();
  const reaping = (async () => {
    for (;;) {
      const pass = await reaper.reapExpired();
      passes += 1;
      tombstoned += pass.tombstoned;
      if (pass.tombstoned === 0) return;
    }
  })();
  const during = await measure(live, reaping);
  await reaping;
  const reapSeconds = (performance.now() - startedAt) / 1000;

  const after = await measure(live, seconds(SECONDS));

  const { rows: left } = await admin.query<{ expired: number; tombstones: number }>(
    `SELECT (SELECT count(*)::int FROM ${SCHEMA}.tasks WHERE expires_at <= now()) AS expired,
            (SELECT count(*)::int FROM ${SCHEMA}.tombstones) AS tombstones`,
  );

  console.log(`\nreaper: ${tombstoned} rows tombstoned in ${reapSeconds.toFixed(2)} s over ${passes} passes ` +
    `= ${Math.round(tombstoned / reapSeconds)} rows/s ` +
    `(left expired: ${left[0]!.expired}, tombstones: ${left[0]!.tombstones})\n`);
  console.log('live lifecycles (create → setStatus → complete → getTaskResult):');
  console.log(row('without reaper', before));
  console.log(row('during reap', during));
  console.log(row('after reap', after));
  console.log(`\nduring / without:  p50 × ${(during.p50 / before.p50).toFixed(2)}   p99 × ${(during.p99 / before.p99).toFixed(2)}`);
  console.log(`after / without:   p50 × ${(after.p50 / before.p50).toFixed(2)}   p99 × ${(after.p99 / before.p99).toFixed(2)}`);

  await Promise.all([live.close(), reaper.close()]);
  await admin.query(`DROP SCHEMA ${SCHEMA} CASCADE`);
  await Promise.all([admin, livePool, reaperPool].map((pool) => pool.end()));
  await database.stop();
}

await main();
