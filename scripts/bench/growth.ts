/**
 * How the cost of the hot calls grows with the table: `getTask`, `completeTask` and `listTasks`
 * pages, through PostgresTaskStore, on schemas bulk-loaded with a realistic mix (task-mix.ts) of
 * each size. In each round every operation runs `operations` times on each size, one call at a
 * time, alternating between the sizes call by call; the median latency at each size is divided by
 * the median at the smallest size in the same round.
 */
import type pg from 'pg';
import { migrate, PostgresTaskStore } from '../../src/index.js';
import { percentile, scriptPool } from '../support.js';
import { spread, type Spread } from './rounds.js';
import { loadTaskMix, type LoadedRows } from './task-mix.js';

export interface GrowthOptions {
  /** Table sizes, smallest first: the smallest is the baseline of the ratios. */
  sizes: number[];
  rounds: number;
  /** Calls of each operation per size and round. */
  operations: number;
}

export interface GrowthResult {
  options: GrowthOptions;
  loads: (LoadedRows & { size: number })[];
  operations: {
    name: string;
    bySize: { size: number; medianMs: Spread; ratio: Spread }[];
  }[];
}

export const GROWTH_OPERATIONS = {
  getTask: 'getTask',
  completeTask: 'completeTask',
  ownerPage: 'listTasks page (one owner)',
  firstPage: 'listTasks first page (all owners)',
} as const;

const PAGE = 50;

interface Sized {
  size: number;
  schema: string;
  store: PostgresTaskStore;
  pool: pg.Pool;
  liveIds: string[];
  workingIds: string[];
  owners: string[];
}

async function sample(pool: pg.Pool, query: string, count: number): Promise<string[]> {
  const { rows } = await pool.query<{ value: string }>(query, [count]);
  return rows.map((row) => row.value);
}

async function prepareSize(connectionString: string, admin: pg.Pool, size: number, samples: number): Promise<{ sized: Sized; load: LoadedRows }> {
  const schema = `bench_growth_${size}`;
  await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await migrate({ pool: admin, schema });
  let reported = 0;
  const load = await loadTaskMix(admin, schema, { tasks: size }, (loaded) => {
    if (size >= 1_000_000 && loaded - reported >= 500_000) {
      reported = loaded;
      console.log(`    ${schema}: ${loaded.toLocaleString('en-US')} tasks loaded`);
    }
  });
  console.log(
    `  ${schema}: ${load.tasks} tasks, ${load.history} history rows, ${load.inputRequests} input requests, ` +
      `${load.tombstones} tombstones in ${load.seconds.toFixed(1)} s`,
  );
  const live = `(expires_at IS NULL OR expires_at > now() + interval '1 hour')`;
  const pool = scriptPool(connectionString, 2);
  const sized: Sized = {
    size,
    schema,
    pool,
    store: new PostgresTaskStore({ pool, schema, reaper: false }),
    liveIds: await sample(admin, `SELECT task_id AS value FROM ${schema}.tasks WHERE ${live} ORDER BY random() LIMIT $1`, samples),
    workingIds: await sample(
      admin,
      `SELECT task_id AS value FROM ${schema}.tasks WHERE status = 'working' AND ${live} ORDER BY random() LIMIT $1`,
      samples,
    ),
    owners: await sample(
      admin,
      `SELECT owner AS value FROM (SELECT DISTINCT owner FROM ${schema}.tasks WHERE owner IS NOT NULL) AS o ORDER BY random() LIMIT $1`,
      samples,
    ),
  };
  return { sized, load };
}

/** Puts the sampled working tasks back to work, untimed, so each round completes them afresh. */
async function resetWorking(sized: Sized): Promise<void> {
  await sized.pool.query(
    `UPDATE ${sized.schema}.tasks
        SET status = 'working', previous_status = 'working', status_message = 'step 3 of 7', result = NULL
      WHERE task_id = ANY($1::text[])`,
    [sized.workingIds],
  );
}

const RESULT = { content: [{ type: 'text' as const, text: 'done' }] };

interface Operation {
  /** The timed call, the `i`-th of its round. */
  run(i: number): Promise<unknown>;
  /** Untimed, before the `i`-th call. */
  before?(i: number): Promise<void>;
}

function operationsOn(sized: Sized): Record<string, Operation> {
  const pick = <T>(values: T[], i: number) => values[i % values.length]!;
  return {
    [GROWTH_OPERATIONS.getTask]: {
      run: async (i) => {
        if (!(await sized.store.getTask(pick(sized.liveIds, i)))) throw new Error('a sampled task is missing');
      },
    },
    [GROWTH_OPERATIONS.completeTask]: {
      run: async (i) => {
        if (!(await sized.store.completeTask(pick(sized.workingIds, i), RESULT))) throw new Error('a sampled task was not working');
      },
      // A small table may hold fewer live working tasks than a round completes: each lap over them
      // starts with them back at work.
      before: async (i) => {
        if (i > 0 && i % sized.workingIds.length === 0) await resetWorking(sized);
      },
    },
    [GROWTH_OPERATIONS.ownerPage]: { run: (i) => sized.store.listTasks({ owner: pick(sized.owners, i), limit: PAGE }) },
    [GROWTH_OPERATIONS.firstPage]: { run: () => sized.store.listTasks({ limit: PAGE }) },
  };
}

export async function runGrowthBenchmark(connectionString: string, options: GrowthOptions): Promise<GrowthResult> {
  const sizes = [...options.sizes].sort((a, b) => a - b);
  const admin = scriptPool(connectionString, 2);
  const prepared: Sized[] = [];
  const loads: GrowthResult['loads'] = [];
  console.log(`growth: bulk-loading ${sizes.map((size) => size.toLocaleString('en-US')).join(', ')} tasks`);
  try {
    for (const size of sizes) {
      const { sized, load } = await prepareSize(connectionString, admin, size, options.operations);
      prepared.push(sized);
      loads.push({ size, ...load });
    }
    const names = Object.values(GROWTH_OPERATIONS);
    // medians[name][size index][round]
    const medians = new Map(names.map((name) => [name as string, prepared.map(() => [] as number[])]));
    const calls = prepared.map(operationsOn);
    for (let round = -1; round < options.rounds; round++) {
      for (const sized of prepared) await resetWorking(sized);
      for (const name of names) {
        // Calls alternate between the sizes one by one, so that a burst of noise hits every size.
        const samples = prepared.map(() => [] as number[]);
        for (let i = 0; i < options.operations; i++) {
          for (let k = 0; k < prepared.length; k++) {
            const index = (k + i) % prepared.length;
            const operation = calls[index]![name]!;
            await operation.before?.(i);
            const startedAt = performance.now();
            await operation.run(i);
            samples[index]!.push(performance.now() - startedAt);
          }
        }
        if (round >= 0) samples.forEach((taken, index) => medians.get(name)![index]!.push(percentile(taken, 50))); // round -1 warms up
      }
      if (round >= 0) console.log(`  growth round ${round + 1} of ${options.rounds} done`);
    }
    const operations = names.map((name) => {
      const bySize = medians.get(name)!;
      return {
        name,
        bySize: prepared.map(({ size }, index) => ({
          size,
          medianMs: spread(bySize[index]!),
          ratio: spread(bySize[index]!.map((ms, round) => ms / bySize[0]![round]!)),
        })),
      };
    });
    for (const operation of operations) {
      console.log(`  ${operation.name}`);
      for (const { size, medianMs, ratio } of operation.bySize) {
        console.log(
          `    ${size.toLocaleString('en-US').padStart(12)} tasks: ${medianMs.median.toFixed(3)} ms   ` +
            `${ratio.median.toFixed(2)} × (${ratio.min.toFixed(2)}–${ratio.max.toFixed(2)}) the smallest`,
        );
      }
    }
    return { options: { ...options, sizes }, loads, operations };
  } finally {
    for (const sized of prepared) {
      await sized.store.close();
      await sized.pool.end();
      await admin.query(`DROP SCHEMA ${sized.schema} CASCADE`);
    }
    await admin.end();
  }
}
