/**
 * Does the reaper keep up with a backlog while staying out of live traffic's way? Loads a backlog
 * of expired tasks (the realistic mix of task-mix.ts, every row past its deadline), then measures
 * live task lifecycles three times: with no reaper running (the idle value), while a second store
 * instance's reapExpired() drains the backlog, and after it (how far the machine drifted).
 */
import { migrate, PostgresTaskStore } from '../../src/index.js';
import { percentile, scriptPool, sleep, storeLifecycle } from '../support.js';
import { loadTaskMix } from './task-mix.js';

export interface ReaperOptions {
  rows: number;
  /** Length of the idle and after measurements. */
  seconds: number;
  /** Live lifecycles in flight. */
  concurrency: number;
}

export interface Latencies {
  count: number;
  p50: number;
  p99: number;
  max: number;
}

export interface ReaperResult {
  options: ReaperOptions;
  loadSeconds: number;
  tombstoned: number;
  passes: number;
  reapSeconds: number;
  rowsPerSecond: number;
  live: { idle: Latencies; during: Latencies; after: Latencies };
  /** p99 during the reap / idle p99. */
  p99Ratio: number;
}

const SCHEMA = 'bench_reaper';

/** Runs `concurrency` loops of lifecycles until `until` resolves; their latencies in ms. */
async function measure(store: PostgresTaskStore, concurrency: number, until: Promise<unknown>): Promise<Latencies> {
  let stop = false;
  void until.finally(() => (stop = true));
  const samples: number[] = [];
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (!stop) {
        const startedAt = performance.now();
        await storeLifecycle(store);
        samples.push(performance.now() - startedAt);
      }
    }),
  );
  return { count: samples.length, p50: percentile(samples, 50), p99: percentile(samples, 99), max: percentile(samples, 100) };
}

function row(name: string, l: Latencies): string {
  const ms = (value: number) => `${value.toFixed(2)} ms`.padStart(10);
  return `  ${name.padEnd(16)} ${String(l.count).padStart(7)} lifecycles   p50 ${ms(l.p50)}   p99 ${ms(l.p99)}   max ${ms(l.max)}`;
}

export async function runReaperBenchmark(connectionString: string, options: ReaperOptions): Promise<ReaperResult> {
  const admin = scriptPool(connectionString, 2);
  await admin.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
  await migrate({ pool: admin, schema: SCHEMA });
  console.log(`reaper: loading ${options.rows.toLocaleString('en-US')} expired tasks; ${options.concurrency} live lifecycles in flight`);
  const load = await loadTaskMix(admin, SCHEMA, { tasks: options.rows, expiredShare: 1, tombstoneShare: 0 });
  console.log(`  loaded in ${load.seconds.toFixed(1)} s (${load.history} history rows, ${load.inputRequests} input requests)`);

  // Separate pools, as two application servers would have.
  const livePool = scriptPool(connectionString, 10);
  const reaperPool = scriptPool(connectionString, 2);
  const live = new PostgresTaskStore({ pool: livePool, schema: SCHEMA, reaper: false });
  // reaper: false so nothing runs before we ask; reapExpired() uses the default batch size.
  const reaper = new PostgresTaskStore({ pool: reaperPool, schema: SCHEMA, reaper: false });
  try {
    await measure(live, options.concurrency, sleep(Math.min(1, options.seconds) * 1000)); // warm-up: connections, plan caches
    const idle = await measure(live, options.concurrency, sleep(options.seconds * 1000));

    let tombstoned = 0;
    let passes = 0;
    const startedAt = performance.now();
    const reaping = (async () => {
      for (;;) {
        const pass = await reaper.reapExpired();
        passes += 1;
        tombstoned += pass.tombstoned;
        if (pass.tombstoned === 0) return;
      }
    })();
    const during = await measure(live, options.concurrency, reaping);
    await reaping;
    const reapSeconds = (performance.now() - startedAt) / 1000;
    const after = await measure(live, options.concurrency, sleep(options.seconds * 1000));

    const { rows: left } = await admin.query<{ expired: number }>(
      `SELECT count(*)::int AS expired FROM ${SCHEMA}.tasks WHERE expires_at <= now()`,
    );
    const rowsPerSecond = tombstoned / reapSeconds;
    console.log(
      `  ${tombstoned} rows tombstoned in ${reapSeconds.toFixed(2)} s over ${passes} passes = ` +
        `${Math.round(rowsPerSecond)} rows/s (left of the backlog: ${left[0]!.expired})`,
    );
    console.log(row('idle', idle));
    console.log(row('during the reap', during));
    console.log(row('after', after));
    const p99Ratio = during.p99 / idle.p99;
    console.log(`  p99 during / idle × ${p99Ratio.toFixed(2)}; after / idle × ${(after.p99 / idle.p99).toFixed(2)}`);
    return {
      options,
      loadSeconds: load.seconds,
      tombstoned,
      passes,
      reapSeconds,
      rowsPerSecond,
      live: { idle, during, after },
      p99Ratio,
    };
  } finally {
    await Promise.all([live.close(), reaper.close()]);
    await admin.query(`DROP SCHEMA ${SCHEMA} CASCADE`);
    await Promise.all([admin, livePool, reaperPool].map((pool) => pool.end()));
  }
}
