/**
 * Runs every benchmark on one database and writes bench/results.json, the charts in
 * bench/charts/ and docs/BENCHMARKS.md, then prints the targets. See docs/BENCHMARKS.md.
 *
 *   npm run bench:all                                (the sizes the targets are stated for)
 *   npm run bench:all -- --preset=quick --only=lifecycle,growth
 *   npm run bench:smoke                              (tiny sizes, into .scratch/bench-smoke)
 */
import { fileURLToPath } from 'node:url';
import { join, resolve } from 'node:path';
import { openScriptDatabase } from './database.js';
import { runGrowthBenchmark, type GrowthOptions } from './bench/growth.js';
import { runIndexBenchmark, type IndexOptions } from './bench/indexes.js';
import { runLifecycleBenchmark, type LifecycleOptions } from './bench/lifecycle.js';
import { describeMachine } from './bench/machine.js';
import { runMcpBenchmark, type McpOptions } from './bench/mcp.js';
import { runMemoryBenchmark, type MemoryOptions } from './bench/memory.js';
import { parseOptions } from './bench/options.js';
import { runReaperBenchmark, type ReaperOptions } from './bench/reaper.js';
import { writeReport } from './bench/report.js';
import { DEFAULT_SECTIONS, readResults, SECTION_NAMES, writeResults, type BenchSections, type SectionName } from './bench/results.js';
import { checkTargets, formatCheck } from './bench/targets.js';
import { runWakeBenchmark, type WakeOptions } from './bench/wake-latency.js';

interface Preset {
  lifecycle: LifecycleOptions;
  wake: WakeOptions;
  mcp: McpOptions;
  growth: GrowthOptions;
  indexes: IndexOptions;
  reaper: ReaperOptions;
  memory: MemoryOptions;
}

const PRESETS: Record<string, Preset> = {
  full: {
    lifecycle: { concurrencies: [1, 16, 64], seconds: 3, rounds: 5, poolSize: 20, pgBoss: true, leaseRounds: 32 },
    wake: { tasks: 1000, pollers: 200 },
    mcp: { concurrencies: [1, 16], seconds: 3, rounds: 5, tasks: 200, latencyConcurrency: 4, pollIntervalMs: 1000 },
    growth: { sizes: [1_000, 1_000_000], rounds: 5, operations: 200 },
    indexes: { tasks: 1_000_000, rounds: 5, inserts: 2_000 },
    reaper: { rows: 1_000_000, pacings: [0, 1], seconds: 5, concurrency: 4 },
    memory: { waiters: 10_000, tokens: 10_000 },
  },
  quick: {
    lifecycle: { concurrencies: [1, 16, 64], seconds: 1, rounds: 3, poolSize: 20, pgBoss: true, leaseRounds: 8 },
    wake: { tasks: 300, pollers: 50 },
    mcp: { concurrencies: [1, 16], seconds: 1, rounds: 3, tasks: 50, latencyConcurrency: 4, pollIntervalMs: 1000 },
    growth: { sizes: [1_000, 100_000], rounds: 3, operations: 100 },
    indexes: { tasks: 100_000, rounds: 3, inserts: 1_000 },
    reaper: { rows: 100_000, pacings: [0, 1], seconds: 2, concurrency: 4 },
    memory: { waiters: 10_000, tokens: 10_000 },
  },
  smoke: {
    lifecycle: { concurrencies: [1, 4], seconds: 0.2, rounds: 1, poolSize: 4, pgBoss: true, leaseRounds: 2 },
    wake: { tasks: 20, pollers: 5 },
    mcp: { concurrencies: [1, 4], seconds: 0.3, rounds: 1, tasks: 8, latencyConcurrency: 4, pollIntervalMs: 1000 },
    growth: { sizes: [100, 2_000], rounds: 1, operations: 10 },
    indexes: { tasks: 2_000, rounds: 1, inserts: 20 },
    reaper: { rows: 2_000, pacings: [0, 1], seconds: 0.3, concurrency: 2 },
    memory: { waiters: 200, tokens: 200 },
  },
};

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const options = parseOptions(`npm run bench:all -- [options]\n  --preset=full|quick|smoke   --only=${DEFAULT_SECTIONS.join(',')}   --tenMillion`, {
  preset: 'full',
  only: DEFAULT_SECTIONS.join(','),
  tenMillion: false,
  pgBoss: true,
  out: '',
});
const preset = PRESETS[options.preset];
if (!preset) throw new Error(`unknown preset ${options.preset}: full, quick or smoke`);
// `--only=` (empty) runs nothing and rewrites the page from results.json, e.g. after editing findings.md.
const only = options.only.split(',').map((name) => name.trim()).filter(Boolean) as SectionName[];
// The opt-in run with 10,000,000 tasks is a section of its own (see results.ts).
if (options.tenMillion && !only.includes('growthTenMillion')) only.push('growthTenMillion');
for (const name of only) if (!SECTION_NAMES.includes(name)) throw new Error(`unknown section ${name}`);
const out = resolve(ROOT, options.out || (options.preset === 'smoke' ? '.scratch/bench-smoke' : '.'));
const paths = {
  results: join(out, 'bench', 'results.json'),
  report: { markdown: join(out, 'docs', 'BENCHMARKS.md'), chartsDirectory: join(out, 'bench', 'charts'), findings: join(ROOT, 'bench', 'findings.md') },
};

type Runners = { [K in SectionName]?: (connectionString: string) => Promise<BenchSections[K]['result']> };
const runners: Runners = {
  lifecycle: (url) => runLifecycleBenchmark(url, { ...preset.lifecycle, pgBoss: options.pgBoss && preset.lifecycle.pgBoss }),
  wake: (url) => runWakeBenchmark(url, preset.wake),
  mcp: (url) => runMcpBenchmark(url, preset.mcp),
  growth: (url) => runGrowthBenchmark(url, preset.growth),
  growthTenMillion: (url) => runGrowthBenchmark(url, { ...preset.growth, sizes: [...preset.growth.sizes, 10_000_000] }),
  indexes: (url) => runIndexBenchmark(url, preset.indexes),
  reaper: (url) => runReaperBenchmark(url, preset.reaper),
  memory: (url) => runMemoryBenchmark(url, preset.memory),
};

const database = only.length > 0 ? await openScriptDatabase() : null;
const startedAt = performance.now();
const results = readResults(paths.results);
try {
  if (database) console.log(`database: ${database.description}; preset ${options.preset}; results into ${out}\n`);
  for (const name of only) {
    const runner = runners[name] as ((url: string) => Promise<unknown>) | undefined;
    if (!runner) {
      console.log(`${name}: not available yet, skipped\n`);
      continue;
    }
    // The load average is read per section, as the machine's business changes during a long run.
    const machine = await describeMachine(database!.connectionString, database!.description);
    const result = await runner(database!.connectionString);
    (results.sections as Record<string, unknown>)[name] = { measuredAt: new Date().toISOString(), preset: options.preset, machine, result };
    results.updatedAt = new Date().toISOString();
    writeResults(paths.results, results); // after each section, so an interrupted run keeps what it measured
    console.log('');
  }
} finally {
  await database?.stop();
}
writeReport(results, paths.report);
console.log(`targets (${options.preset === 'full' ? 'full sizes' : `preset ${options.preset}: indicative only`}):`);
for (const check of checkTargets(results.sections)) console.log(`  ${formatCheck(check)}`);
console.log(`\nwrote ${paths.results}, ${paths.report.markdown} and its charts in ${((performance.now() - startedAt) / 60000).toFixed(1)} min`);
