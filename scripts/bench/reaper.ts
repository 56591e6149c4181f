/**
 * Does the reaper keep up with a backlog while staying out of live traffic's way? For each pacing
 * setting, loads a backlog of expired tasks (the realistic mix of task-mix.ts, every row past its
 * deadline), then measures live task lifecycles three times: with no reaper running (the idle
 * value), while a second store instance's reapExpired() drains the backlog, and after it (how far
 * the machine drifted). Beside the rate, the WAL the reap wrote per row and the full-page images
 * in it (`pg_stat_wal`, PostgreSQL 14 and later).
 */
import type pg from 'pg';
import { migrate, PostgresTaskStore } from '../../src/index.js';
import { percentile, scriptPool, sleep, storeLifecycle } from '../support.js';
import { loadTaskMix } from './task-mix.js';

export interface ReaperOptions {
  rows: number;
  /** The reaper's `pacing` settings to measure, each on a backlog of its own. */
  pacings: number[];
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

export interface ReaperRun {
  pacing: number;
  loadSeconds: number;
  tombstoned: number;
  reapSeconds: number;
  rowsPerSecond: number;
  /** WAL bytes the server wrote during the reap, per row tombstoned (live traffic's included). */
  walBytesPerRow: number | null;
  /** Full-page images in that WAL, per row tombstoned. */
  fullPageImagesPerRow: number | null;
  live: { idle: Latencies; during: Latencies; after: Latencies };
  /** p99 during the reap / idle p99. */
  p99Ratio: number;
}

export interface ReaperResult {
  options: ReaperOptions;
  runs: ReaperRun[];
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

/** The server's WAL counters; null before PostgreSQL 14 (no pg_stat_wal). */
async function walCounters(admin: pg.Pool): Promise<{ bytes: number; fullPageImages: number } | null> {
  const { rows } = await admin.query<{ bytes: string; fpi: string }>(
    `SELECT wal_bytes::text AS bytes, wal_fpi::text AS fpi FROM pg_stat_wal`,
  ).catch(() => ({ rows: [] as { bytes: string; fpi: string }[] }));
  return rows[0] ? { bytes: Number(rows[0].bytes), fullPageImages: Number(rows[0].fpi) } : null;
}

export async function runReaperBenchmark(connectionString: string, options: ReaperOptions): Promise<ReaperResult> {
  const runs: ReaperRun[] = [];
  for (const pacing of options.pacings) runs.push(await reaperRun(connectionString, options, pacing));
  if (runs.length > 1) {
    console.log('reaper: pacing → rows/s, live p99 during / idle');
    for (const run of runs) console.log(`  pacing ${run.pacing}: ${Math.round(run.rowsPerSecond)} rows/s, p99 × ${run.p99Ratio.toFixed(2)}`);
  }
  return { options, runs };
}

async function reaperRun(connectionString: string, options: ReaperOptions, pacing: number): Promise<ReaperRun> {
  const admin = scriptPool(connectionString, 2);
  await admin.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
  await migrate({ pool: admin, schema: SCHEMA });
  console.log(
    `reaper, pacing ${pacing}: loading ${options.rows.toLocaleString('en-US')} expired tasks; ${options.concurrency} live lifecycles in flight`,
  );
  const load = await loadTaskMix(admin, SCHEMA, { tasks: options.rows, expiredShare: 1, tombstoneShare: 0 });
  console.log(`  loaded in ${load.seconds.toFixed(1)} s (${load.history} history rows, ${load.inputRequests} input requests)`);

  // Separate pools, as two application servers would have.
  const livePool = scriptPool(connectionString, 10);
  const reaperPool = scriptPool(connectionString, 2);
  const live = new PostgresTaskStore({ pool: livePool, schema: SCHEMA, reaper: false });
  /** Stores to close at the end: the live one, and the reaper once it is opened. */
  const opened = [live];
  try {
    await measure(live, options.concurrency, sleep(Math.min(1, options.seconds) * 1000)); // warm-up: connections, plan caches
    const idle = await measure(live, options.concurrency, sleep(options.seconds * 1000));

    // The reaper as an application server runs it: automatic, with the pacing under test, its
    // first pass starting as the store opens and draining the whole backlog.
    const walBefore = await walCounters(admin);
    const startedAt = performance.now();
    const reaper = new PostgresTaskStore({ pool: reaperPool, schema: SCHEMA, reaper: { intervalMs: 86_400_000, pacing } });
    opened.push(reaper);
    const reaping = new Promise<number>((resolve, reject) => {
      reaper.onReaperPass((outcome) => (outcome instanceof Error ? reject(outcome) : resolve(outcome.tombstoned)));
    });
    const during = await measure(live, options.concurrency, reaping);
    const tombstoned = await reaping;
    const reapSeconds = (performance.now() - startedAt) / 1000;
    const walAfter = await walCounters(admin);
    const after = await measure(live, options.concurrency, sleep(options.seconds * 1000));

    const { rows: left } = await admin.query<{ expired: number }>(
      `SELECT count(*)::int AS expired FROM ${SCHEMA}.tasks WHERE expires_at <= now()`,
    );
    const rowsPerSecond = tombstoned / reapSeconds;
    const perRow = (counter: 'bytes' | 'fullPageImages') =>
      walBefore && walAfter && tombstoned > 0 ? (walAfter[counter] - walBefore[counter]) / tombstoned : null;
    const walBytesPerRow = perRow('bytes');
    const fullPageImagesPerRow = perRow('fullPageImages');
    console.log(
      `  ${tombstoned} rows tombstoned in ${reapSeconds.toFixed(2)} s = ` +
        `${Math.round(rowsPerSecond)} rows/s (left of the backlog: ${left[0]!.expired})` +
        (walBytesPerRow === null ? '' : `; WAL ${Math.round(walBytesPerRow)} bytes and ${fullPageImagesPerRow!.toFixed(2)} full-page images per row`),
    );
    console.log(row('idle', idle));
    console.log(row('during the reap', during));
    console.log(row('after', after));
    const p99Ratio = during.p99 / idle.p99;
    console.log(`  p99 during / idle × ${p99Ratio.toFixed(2)}; after / idle × ${(after.p99 / idle.p99).toFixed(2)}`);
    return {
      pacing,
      loadSeconds: load.seconds,
      tombstoned,
      reapSeconds,
      rowsPerSecond,
      walBytesPerRow,
      fullPageImagesPerRow,
      live: { idle, during, after },
      p99Ratio,
    };
  } finally {
    await Promise.all(opened.map((store) => store.close()));
    await admin.query(`DROP SCHEMA ${SCHEMA} CASCADE`);
    await Promise.all([admin, livePool, reaperPool].map((pool) => pool.end()));
  }
}
