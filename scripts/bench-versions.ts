/**
 * Where a change in lifecycle throughput came from: the lifecycle benchmark's store contender at
 * several commits of this repository, against the floor, in alternating rounds of one run on one
 * database. Each commit is checked out in a temporary git worktree (sharing this checkout's
 * node_modules) and its own `src` and migrations are loaded, each on a schema of its own.
 *
 * Beside the rate, each contender's CPU per lifecycle: this process's (`process.cpuUsage`) and,
 * when the server runs on this machine, the PostgreSQL processes' (from /proc), so a loss can be
 * told apart as JavaScript or SQL. bench/findings.md publishes what it found.
 *
 *   npm run bench:versions -- --commits=eef8d55,98fe08f,HEAD --concurrencies=16,1
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type pg from 'pg';
import { scriptPool, storeLifecycle } from './support.js';
import { createFloorSchema, FLOOR, floorLifecycle } from './bench/lifecycle.js';
import { onScriptDatabase } from './bench/on-database.js';
import { parseOptions } from './bench/options.js';
import { alternatingRounds, formatRatio, runLoops, type Contender } from './bench/rounds.js';

const options = parseOptions('npm run bench:versions -- --commits=<commit>,<commit>,… [options]', {
  commits: 'HEAD',
  concurrencies: [16, 1],
  seconds: 3,
  rounds: 5,
  poolSize: 20,
});

const WARMUP_SECONDS = 0.5;
const REPOSITORY = resolve(import.meta.dirname, '..');
const git = (...args: string[]) => execFileSync('git', ['-C', REPOSITORY, ...args], { encoding: 'utf8' }).trim();

interface Version {
  label: string;
  directory: string;
  schema: string;
}

/** The CPU time of every PostgreSQL process on this machine, in microseconds; null when none is visible. */
function serverCpuMicros(): number | null {
  let ticks = 0;
  let seen = false;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // exited meanwhile
    }
    if (!stat.includes('(postgres)')) continue;
    seen = true;
    // utime, stime, cutime, cstime: the postmaster's reaped children count too.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    ticks += Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]);
  }
  return seen ? (ticks * 1e6) / 100 : null;
}

interface CpuTally {
  lifecycles: number;
  nodeMicros: number;
  serverMicros: number | null;
}

function checkOut(commits: string[]): { versions: Version[]; remove: () => void } {
  const root = mkdtempSync(join(tmpdir(), 'mcp-task-store-versions-'));
  const versions = commits.map((commit, i) => {
    const sha = git('rev-parse', '--short', `${commit}^{commit}`);
    const directory = join(root, sha);
    git('worktree', 'add', '--detach', '--force', directory, sha);
    symlinkSync(join(REPOSITORY, 'node_modules'), join(directory, 'node_modules'));
    return { label: `${sha} ${git('log', '-1', '--format=%ad', '--date=format:%m-%d %H:%M', sha)}`, directory, schema: `bench_version_${i}` };
  });
  return {
    versions,
    remove: () => {
      for (const { directory } of versions) git('worktree', 'remove', '--force', directory);
      rmSync(root, { recursive: true, force: true });
    },
  };
}

/**
 * Many versions' pools would hold more connections than a server allows (max_connections is often
 * 100): each pool lets its connections go once its rounds are over. A measurement opens them and
 * warms them up (prepared statements, the catalog caches of new server processes) before timing.
 */
const versionPool = (connectionString: string): pg.Pool => scriptPool(connectionString, options.poolSize, { idleTimeoutMillis: 200 });

/**
 * A contender on its own pool: the connections opened and warmed up, then the timed loops, with
 * the CPU they used tallied into `tally`.
 */
function measured(name: string, pool: pg.Pool, lifecycle: () => Promise<void>, tally: CpuTally): Contender {
  return {
    name,
    async measure(concurrency, seconds) {
      const clients = await Promise.all(Array.from({ length: Math.min(concurrency, options.poolSize) }, () => pool.connect()));
      for (const client of clients) client.release();
      await runLoops(lifecycle, concurrency, WARMUP_SECONDS);
      const node = process.cpuUsage();
      const server = serverCpuMicros();
      const rate = await runLoops(lifecycle, concurrency, seconds);
      const used = process.cpuUsage(node);
      const serverAfter = serverCpuMicros();
      tally.lifecycles += rate * seconds;
      tally.nodeMicros += used.user + used.system;
      tally.serverMicros = server === null || serverAfter === null || tally.serverMicros === null ? null : tally.serverMicros + serverAfter - server;
      return rate;
    },
  };
}

async function openVersion(connectionString: string, admin: pg.Pool, version: Version) {
  const module = await import(join(version.directory, 'src', 'index.ts'));
  await admin.query(`DROP SCHEMA IF EXISTS ${version.schema} CASCADE`);
  await module.migrate({ pool: admin, schema: version.schema });
  const pool = versionPool(connectionString);
  const store = new module.PostgresTaskStore({ pool, schema: version.schema, reaper: false });
  return {
    label: version.label,
    pool,
    lifecycle: () => storeLifecycle(store),
    close: async () => {
      await store.close();
      await pool.end();
    },
  };
}

await onScriptDatabase(async (connectionString) => {
  const admin = scriptPool(connectionString, 2);
  const floorPool = versionPool(connectionString);
  const { versions, remove } = checkOut(options.commits.split(','));
  const opened: Awaited<ReturnType<typeof openVersion>>[] = [];
  try {
    await createFloorSchema(floorPool);
    for (const version of versions) opened.push(await openVersion(connectionString, admin, version));
    const floor = floorLifecycle(floorPool);
    for (const concurrency of options.concurrencies) {
      const tallies = new Map<string, CpuTally>();
      const contenders = [{ label: FLOOR, pool: floorPool, lifecycle: floor }, ...opened].map(({ label, pool, lifecycle }) => {
        const tally: CpuTally = { lifecycles: 0, nodeMicros: 0, serverMicros: 0 };
        tallies.set(label, tally);
        return measured(label, pool, lifecycle, tally);
      });
      const results = await alternatingRounds(contenders, {
        concurrency,
        seconds: options.seconds,
        rounds: options.rounds,
        warmupSeconds: 0,
      });
      console.log(`concurrency ${concurrency}: ${options.rounds} rounds of ${options.seconds} s, alternating; CPU per lifecycle`);
      for (const result of results) {
        const tally = tallies.get(result.name)!;
        const perLifecycle = (micros: number | null) => (micros === null ? '   n/a' : `${(micros / tally.lifecycles).toFixed(0).padStart(4)} µs`);
        console.log(
          `  ${result.name.padEnd(18)} ${result.rate.median.toFixed(0).padStart(6)}/s  ${formatRatio(result.ratio)} floor` +
            `   node ${perLifecycle(tally.nodeMicros)}, server ${perLifecycle(tally.serverMicros)}`,
        );
      }
    }
  } finally {
    for (const version of opened) await version.close();
    for (const version of versions) await admin.query(`DROP SCHEMA IF EXISTS ${version.schema} CASCADE`);
    await admin.query('DROP SCHEMA IF EXISTS bench_floor CASCADE');
    await Promise.all([admin.end(), floorPool.end()]);
    remove();
  }
});
