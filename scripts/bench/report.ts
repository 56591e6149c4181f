/**
 * Writes docs/BENCHMARKS.md and its SVG charts from results.json: how to run each benchmark, what
 * each figure means, the latest results with the machine they came from, the targets, and the
 * hand-written analysis kept in bench/findings.md.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { barChart, distributionChart } from './charts.js';
import { FLOOR, LEASED_STORE, MEMORY_STORE, PG_BOSS, POSTGRES_STORE, type LifecycleResult } from './lifecycle.js';
import { formatMachine } from './machine.js';
import { MCP_IN_MEMORY, MCP_POSTGRES } from './mcp.js';
import type { BenchResults, Section } from './results.js';
import { checkTargets, formatValue } from './targets.js';
import { HOW_TO_RUN, MEANINGS } from './report-text.js';
import { formatRatio } from './rounds.js';
import type { ReaperRun } from './reaper.js';

export interface ReportPaths {
  markdown: string;
  chartsDirectory: string;
  findings: string;
}

const n = (value: number, digits = 0) => value.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

function provenance(section: Section<unknown>): string {
  const trial = section.preset === 'full' ? '' : ` **Preset \`${section.preset}\`: reduced sizes, a trial run, not the figures the targets are stated for.**`;
  return `_Measured ${section.measuredAt.replace('T', ' ').slice(0, 16)} UTC on ${formatMachine(section.machine)}._${trial}`;
}

function table(header: string[], rows: string[][]): string {
  return [`| ${header.join(' | ')} |`, `| ${header.map(() => '---').join(' | ')} |`, ...rows.map((row) => `| ${row.join(' | ')} |`)].join('\n');
}

function writeChart(paths: ReportPaths, name: string, svg: string): string {
  mkdirSync(paths.chartsDirectory, { recursive: true });
  const file = join(paths.chartsDirectory, name);
  writeFileSync(file, svg);
  return relative(dirname(paths.markdown), file);
}

function lifecycleSection(results: BenchResults, paths: ReportPaths): string[] {
  const section = results.sections.lifecycle;
  if (!section) return ['Not measured yet.'];
  const { byConcurrency, pgBossVersion } = section.result;
  const names = [FLOOR, POSTGRES_STORE, LEASED_STORE, MEMORY_STORE, PG_BOSS].filter((name) => byConcurrency[0]?.contenders.some((c) => c.name === name));
  const chart = writeChart(
    paths,
    'lifecycle-throughput.svg',
    barChart({
      title: 'Lifecycles per second (median round; whiskers: slowest and fastest round)',
      groups: byConcurrency.map(({ concurrency }) => `concurrency ${concurrency}`),
      yLabel: 'lifecycles / s (log scale)',
      logScale: true,
      series: names.map((name) => {
        const of = (c: (typeof byConcurrency)[number]) => c.contenders.find((x) => x.name === name)!;
        return {
          name: name === PG_BOSS && pgBossVersion ? `pg-boss ${pgBossVersion}` : name,
          values: byConcurrency.map((c) => of(c).rate.median),
          low: byConcurrency.map((c) => of(c).rate.min),
          high: byConcurrency.map((c) => of(c).rate.max),
        };
      }),
    }),
  );
  const rows = byConcurrency.flatMap(({ concurrency, contenders }) =>
    contenders.map((c) => [String(concurrency), c.name, n(c.rate.median), formatRatio(c.ratio), c.ratios.map((r) => r.toFixed(2)).join(' ')]),
  );
  const { rounds, seconds, poolSize } = section.result.options;
  return [
    provenance(section),
    '',
    `${rounds} rounds of ${seconds} s per contender and concurrency; pools of ${poolSize} connections` +
      (pgBossVersion ? `; pg-boss ${pgBossVersion} under Node 22.` : '; pg-boss was left out of this run.'),
    '',
    `![Lifecycles per second by concurrency](${chart})`,
    '',
    table(['concurrency', 'contender', 'lifecycles/s (median)', '× floor: median (min–max)', 'per-round ratios'], rows),
    ...heartbeatLines(section.result.heartbeat),
    ...leaseCostLines(section.result.leaseCost),
  ];
}

function leaseCostLines(cost: LifecycleResult['leaseCost']): string[] {
  if (!cost) return [];
  return [
    '',
    `The cost of leasing: "${LEASED_STORE}" against "${POSTGRES_STORE}", the two alone in ${cost.ratios.length} alternating ` +
      `rounds of ${cost.seconds} s at concurrency ${cost.concurrency}: **${formatRatio(cost.ratio)}** the unleased rate ` +
      `(per round ${cost.ratios.map((r) => r.toFixed(2)).join(' ')}). This is the figure the lease target reads.`,
  ];
}

function heartbeatLines(heartbeat: LifecycleResult['heartbeat']): string[] {
  if (!heartbeat) return [];
  return [
    '',
    `Heartbeat: an instance holding ${n(heartbeat.leasedTasks)} leases with a beat every ${heartbeat.heartbeatMs} ms runs ` +
      `**${heartbeat.statementsPerSecond.toFixed(2)} heartbeat statements/s** (${n(heartbeat.renewalsPerSecond)} lease renewals/s); ` +
      `one heartbeat statement renewing all of them takes ${heartbeat.renewMs.toFixed(1)} ms. "${LEASED_STORE}" runs its lifecycles leased while ` +
      'that heartbeat goes on.',
  ];
}

function wakeSection(results: BenchResults, paths: ReportPaths): string[] {
  const section = results.sections.wake;
  if (!section) return ['Not measured yet.'];
  const { notified, polled } = section.result;
  const chart = writeChart(
    paths,
    'wake-latency.svg',
    distributionChart({
      title: 'Commit → waiter wakes, across two instances',
      xLabel: 'ms after the completing commit (log scale)',
      series: [
        { name: 'LISTEN/NOTIFY waiter', percentiles: notified.percentiles },
        { name: 'polling every 1 s (MCP SDK default)', percentiles: polled.percentiles },
      ],
    }),
  );
  const row = (name: string, d: typeof notified) => [name, String(d.count), d.p50.toFixed(2), d.p90.toFixed(2), d.p99.toFixed(2), d.max.toFixed(2)];
  return [
    provenance(section),
    '',
    `![Wake latency distribution](${chart})`,
    '',
    table(['waiter', 'tasks', 'p50 ms', 'p90 ms', 'p99 ms', 'max ms'], [row('LISTEN/NOTIFY', notified), row('polling every 1 s', polled)]),
  ];
}

function mcpSection(results: BenchResults, paths: ReportPaths): string[] {
  const section = results.sections.mcp;
  if (!section) return ['Not measured yet.'];
  const { throughput, resultLatency } = section.result;
  const names = [MCP_POSTGRES, MCP_IN_MEMORY];
  const throughputChart = writeChart(
    paths,
    'mcp-throughput.svg',
    barChart({
      title: 'Task-augmented tool calls per second through MCP (Streamable HTTP)',
      groups: throughput.map(({ concurrency }) => `concurrency ${concurrency}`),
      yLabel: 'tool calls / s',
      series: names.map((name) => {
        const of = (c: (typeof throughput)[number]) => c.contenders.find((x) => x.name === name)!;
        return {
          name,
          values: throughput.map((c) => of(c).rate.median),
          low: throughput.map((c) => of(c).rate.min),
          high: throughput.map((c) => of(c).rate.max),
        };
      }),
    }),
  );
  const latencyChart = writeChart(
    paths,
    'mcp-result-latency.svg',
    distributionChart({
      title: 'Task settles → tasks/result answers',
      xLabel: 'ms after the task settled (log scale)',
      series: [
        { name: 'PostgresTaskStore, across two instances', percentiles: resultLatency.acrossInstances.percentiles },
        { name: 'InMemoryTaskStore (SDK poll), one instance', percentiles: resultLatency.inMemoryPoll.percentiles },
      ],
    }),
  );
  const rows = throughput.flatMap(({ concurrency, contenders }) => contenders.map((c) => [String(concurrency), c.name, n(c.rate.median, 1), formatRatio(c.ratio)]));
  const latency = (name: string, d: typeof resultLatency.acrossInstances) => [name, String(d.count), d.p50.toFixed(2), d.p90.toFixed(2), d.p99.toFixed(2), d.max.toFixed(2)];
  return [
    provenance(section),
    '',
    `![MCP throughput](${throughputChart})`,
    '',
    table(['concurrency', 'server', 'tool calls/s (median)', `× ${MCP_IN_MEMORY}: median (min–max)`], rows),
    '',
    `![MCP result latency](${latencyChart})`,
    '',
    table(
      ['settle → tasks/result', 'tasks', 'p50 ms', 'p90 ms', 'p99 ms', 'max ms'],
      [latency('PostgresTaskStore, two instances', resultLatency.acrossInstances), latency('InMemoryTaskStore, one instance', resultLatency.inMemoryPoll)],
    ),
  ];
}

function growthSection(section: BenchResults['sections']['growth']): string[] {
  if (!section) return ['Not measured yet.'];
  const { operations, loads, options } = section.result;
  const rows = operations.flatMap((operation) =>
    operation.bySize.map(({ size, medianMs, ratio: r }) => [operation.name, n(size), medianMs.median.toFixed(3), formatRatio(r)]),
  );
  const loadRows = loads.map((load) => [n(load.size), n(load.history), n(load.inputRequests), n(load.tombstones), load.seconds.toFixed(1)]);
  return [
    provenance(section),
    '',
    `${options.rounds} rounds; each round runs every operation ${options.operations} times on each size, alternating between ` +
      'the sizes call by call; the median latency of a round at each size is divided by that round’s median at the smallest size.',
    '',
    table(['operation', 'tasks in the table', 'median ms', `× at ${n(options.sizes[0]!)}: median (min–max)`], rows),
    '',
    'What was loaded:',
    '',
    table(['tasks', 'history rows', 'input requests', 'tombstones', 'load s'], loadRows),
  ];
}

function reaperSection(results: BenchResults): string[] {
  const section = results.sections.reaper;
  if (!section?.result.runs) return ['Not measured yet.'];
  const { runs, options } = section.result;
  const perRow = (value: number | null, digits: number) => (value === null ? 'n/a' : value.toFixed(digits));
  const latency = (name: string, l: ReaperRun['live']['idle']) => [name, n(l.count), l.p50.toFixed(2), l.p99.toFixed(2), l.max.toFixed(2)];
  return [
    provenance(section),
    '',
    `Each pacing setting on a backlog of its own of ${n(options.rows)} expired tasks, ${options.concurrency} live lifecycles in flight:`,
    '',
    table(
      ['pacing', 'rows/s', 'live p99 during / idle', 'WAL bytes per row', 'full-page images per row', 'reap s'],
      runs.map((run) => [
        String(run.pacing),
        `**${n(run.rowsPerSecond)}**`,
        `**${run.p99Ratio.toFixed(2)} ×**`,
        perRow(run.walBytesPerRow, 0),
        perRow(run.fullPageImagesPerRow, 2),
        run.reapSeconds.toFixed(1),
      ]),
    ),
    '',
    ...runs.flatMap((run) => [
      `Live lifecycles, pacing ${run.pacing}:`,
      '',
      table(['live lifecycles', 'count', 'p50 ms', 'p99 ms', 'max ms'], [
        latency('idle (no reaper)', run.live.idle),
        latency('during the reap', run.live.during),
        latency('after', run.live.after),
      ]),
      '',
    ]),
  ];
}

function indexesSection(results: BenchResults): string[] {
  const section = results.sections.indexes;
  if (!section) return ['Not measured yet.'];
  const { indexes, creation, load } = section.result;
  const rows = indexes.map((index) => [
    `\`${index.table}.${index.index}\``,
    `\`${index.definition}\``,
    `${index.sizeMb.toFixed(1)} MB`,
    index.constraint ? 'its constraint' : index.walBytesPerTask === null ? '–' : `${index.walBytesPerTask.toFixed(0)} B`,
    index.usedBy.length === 0 ? 'none of the calls' : index.usedBy.map((use) => `${use.call} (${use.node}, ${use.executionMs.toFixed(2)} ms)`).join('; '),
  ]);
  return [
    provenance(section),
    '',
    `${n(load.tasks)} tasks, ${n(load.history)} history rows, ${n(load.tombstones)} tombstones.`,
    '',
    table(['index', 'on', 'size', 'WAL per created task', 'read by (plan node, statement time)'], rows),
    '',
    `A created task on the server: ${creation.withThem.us.toFixed(1)} µs and ${n(Math.round(creation.withThem.walBytes))} B of WAL ` +
      `with every index; ${creation.without.us.toFixed(1)} µs and ${n(Math.round(creation.without.walBytes))} B without the ones that ` +
      'back no constraint.',
  ];
}

function memorySection(results: BenchResults): string[] {
  const section = results.sections.memory;
  if (!section) return ['Not measured yet.'];
  const m = section.result;
  return [
    provenance(section),
    '',
    table(
      ['figure', 'value'],
      [
        ['pending waiters / live tokens held', `${n(m.waiters)} / ${n(m.tokens)}`],
        ['extra resident memory (after a full GC)', `${m.extraRssMb.toFixed(1)} MB over ${m.baselineRssMb.toFixed(0)} MB`],
        ['extra V8 heap in use', `${m.extraHeapMb.toFixed(1)} MB`],
        ['listener connections', String(m.listenerConnections)],
        ['connections of the instance, idle → holding', `${m.connectionsIdle} → ${m.connectionsHolding} (pool of at most 10, plus the listener)`],
        ['registering every waiter', `${m.registerSeconds.toFixed(2)} s`],
        ['one UPDATE settles every waited task → the last waiter resolves', `${m.wakeAllSeconds.toFixed(2)} s`],
      ],
    ),
  ];
}

function targetsSection(results: BenchResults): string[] {
  const rows = checkTargets(results.sections).map((c) => [
    c.target,
    `${c.direction} ${formatValue(c.limit, c.unit)}`,
    c.value === null ? 'not measured' : formatValue(c.value, c.unit),
    c.met === null ? '–' : `${c.met ? 'met' : '**missed**'}${c.trial ? ' (trial run)' : ''}`,
  ]);
  return [table(['target', 'wanted', 'measured', ''], rows)];
}

export function writeReport(results: BenchResults, paths: ReportPaths): void {
  const findings = existsSync(paths.findings) ? readFileSync(paths.findings, 'utf8').trim() : 'None written yet.';
  const lines = [
    '# Benchmarks',
    '',
    '<!-- Written by `npm run bench:all` from bench/results.json; edit scripts/bench/report*.ts or bench/findings.md instead. -->',
    '',
    'Every figure here is measured on one machine in one run, and the comparisons are ratios between contenders that ran ' +
      'in alternating rounds of the same run: on a shared or noisy machine the absolute rates drift, the ratios much less. ' +
      'Each section says where and when it was measured.',
    '',
    '## How to run them',
    '',
    HOW_TO_RUN,
    '',
    '## Targets',
    '',
    ...targetsSection(results),
    '',
    '## Lifecycle throughput',
    '',
    MEANINGS.lifecycle,
    '',
    ...lifecycleSection(results, paths),
    '',
    '## Through MCP',
    '',
    MEANINGS.mcp,
    '',
    ...mcpSection(results, paths),
    '',
    '## Wake latency across instances',
    '',
    MEANINGS.wake,
    '',
    ...wakeSection(results, paths),
    '',
    '## Growth: 1,000 to 1,000,000 tasks',
    '',
    MEANINGS.growth,
    '',
    ...growthSection(results.sections.growth),
    '',
    '### The opt-in run with 10,000,000 tasks',
    '',
    MEANINGS.growthTenMillion,
    '',
    ...growthSection(results.sections.growthTenMillion),
    '',
    '## Indexes at 1,000,000 tasks: what reads each, what each costs',
    '',
    MEANINGS.indexes,
    '',
    ...indexesSection(results),
    '',
    '## The reaper on a backlog',
    '',
    MEANINGS.reaper,
    '',
    ...reaperSection(results),
    '',
    '## Memory and connections of waiters and tokens',
    '',
    MEANINGS.memory,
    '',
    ...memorySection(results),
    '',
    '## Where targets are missed, and why',
    '',
    findings,
    '',
  ];
  mkdirSync(dirname(paths.markdown), { recursive: true });
  writeFileSync(paths.markdown, lines.join('\n'));
}
