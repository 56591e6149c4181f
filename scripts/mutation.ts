/**
 * `npm run test:mutation`: StrykerJS mutates the source and runs the tests against every mutant,
 * one run per target (`test/mutation/stryker.<target>.config.mjs`):
 *   - `memory`: the contract and the memory store, against the tests that need no database;
 *   - `postgres-store`, `postgres-statements`, `postgres-watch`, `postgres-reaper`: the PostgreSQL
 *     store's calls, their SQL, what it watches, and its reaper, against the store's own tests
 *     (`--only=postgres` is all four). They share one PostgreSQL server: TEST_DATABASE_URL when
 *     set, else DATABASE_URL, else a throwaway embedded PostgreSQL.
 * Each run takes tens of minutes on 2 cores, so CI does not run it; a later run of a target re-tests
 * only the mutants whose code or covering tests changed (Stryker's incremental mode, `--force` to
 * re-test all). Stryker sees a change to a test file, not to the modules it imports (the
 * conformance suite, the test support), so a change there re-tests every mutant by itself. Each
 * target's per-file scores and its surviving mutants are printed and written into docs/MUTATION.md
 * as soon as it finishes, so the next contributor starts from the list even on a fresh checkout;
 * Stryker's HTML reports (every survivor, in place) are left in .scratch/mutation/.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpus } from 'node:os';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openScriptDatabase, type ScriptDatabase } from './database.js';
import { parseOptions } from './bench/options.js';

const TARGETS = ['memory', 'postgres-store', 'postgres-statements', 'postgres-watch', 'postgres-reaper'] as const;
type Target = (typeof TARGETS)[number];
/** Names that stand for several targets. */
const GROUPS: Record<string, Target[]> = { postgres: ['postgres-store', 'postgres-statements', 'postgres-watch', 'postgres-reaper'] };

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const PAGE = join(ROOT, 'docs', 'MUTATION.md');
const SCRATCH = join(ROOT, '.scratch', 'mutation');
const START = '<!-- mutation-results:start -->';
const END = '<!-- mutation-results:end -->';

/** Stryker's report (mutation-testing-report-schema), the part read here. */
interface MutationReport {
  files: Record<string, { mutants: Mutant[] }>;
}

interface Mutant {
  status: string;
  mutatorName: string;
  replacement?: string;
  location: { start: { line: number; column: number } };
}

interface FileScore {
  file: string;
  killed: number;
  timedOut: number;
  survived: number;
  noCoverage: number;
  /** Killed or timed out, out of every mutant that compiled and ran (Stryker's mutation score). */
  score: number;
}

const options = parseOptions(`npm run test:mutation -- [--only=${['postgres', ...TARGETS].join(',')}] [--force]`, {
  only: TARGETS.join(','),
  // Re-test every mutant, not only those whose code or covering tests changed since the last run.
  force: false,
});
const chosen = options.only.split(',').flatMap((name): Target[] => {
  const trimmed = name.trim();
  if (GROUPS[trimmed]) return GROUPS[trimmed];
  if (!(TARGETS as readonly string[]).includes(trimmed)) throw new Error(`unknown target ${trimmed}: ${['postgres', ...TARGETS].join(', ')}`);
  return [trimmed as Target];
});

let database: ScriptDatabase | null = null;
try {
  for (const target of chosen) {
    const env = { ...process.env };
    if (target.startsWith('postgres') && !env.TEST_DATABASE_URL) {
      database ??= await openScriptDatabase();
      console.log(`database: ${database.description}`);
      env.TEST_DATABASE_URL = database.connectionString;
    }
    const startedAt = performance.now();
    const helpers = testHelpersFingerprint();
    const helpersSeen = join(SCRATCH, `${target}.test-helpers`);
    const helpersChanged = !existsSync(helpersSeen) || readFileSync(helpersSeen, 'utf8') !== helpers;
    if (helpersChanged && !options.force) console.log(`${target}: the test helpers changed since its last run here: every mutant is re-tested`);
    await runStryker(target, env, options.force || helpersChanged);
    mkdirSync(SCRATCH, { recursive: true });
    writeFileSync(helpersSeen, helpers);
    const minutes = (performance.now() - startedAt) / 60_000;
    const report: MutationReport = JSON.parse(readFileSync(join(SCRATCH, `${target}.json`), 'utf8'));
    const table = `${renderTable(target, scoresOf(report), minutes)}\n\n${renderSurvivors(report)}`;
    console.log(`\n${table}`);
    recordOnPage(target, table);
  }
} finally {
  await database?.stop();
}

function runStryker(target: Target, env: NodeJS.ProcessEnv, force: boolean): Promise<void> {
  const config = join('test', 'mutation', `stryker.${target}.config.mjs`);
  return new Promise((resolve, reject) => {
    const child = spawn('npx', ['stryker', 'run', config, ...(force ? ['--force'] : [])], { cwd: ROOT, env, stdio: 'inherit' });
    child.on('error', reject);
    child.on('exit', (code, signal) =>
      code === 0 ? resolve() : reject(new Error(`stryker (${target}) exited with ${signal ?? code}`)),
    );
  });
}

/** A hash of every file under test/ that is not itself a test file: what Stryker's incremental mode cannot see. */
function testHelpersFingerprint(): string {
  const hash = createHash('sha256');
  const files = readdirSync(join(ROOT, 'test'), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && !entry.name.endsWith('.test.ts'))
    .map((entry) => join(entry.parentPath, entry.name))
    .sort();
  for (const file of files) hash.update(relative(ROOT, file)).update('\0').update(readFileSync(file)).update('\0');
  return hash.digest('hex');
}

function scoresOf(report: MutationReport): FileScore[] {
  return Object.entries(report.files)
    .map(([file, { mutants }]) => {
      const count = (status: string) => mutants.filter((mutant) => mutant.status === status).length;
      const killed = count('Killed');
      const timedOut = count('Timeout');
      const survived = count('Survived');
      const noCoverage = count('NoCoverage');
      const ran = killed + timedOut + survived + noCoverage;
      return { file, killed, timedOut, survived, noCoverage, score: ran === 0 ? 100 : ((killed + timedOut) / ran) * 100 };
    })
    .sort((a, b) => a.file.localeCompare(b.file));
}

function renderTable(target: Target, scores: FileScore[], minutes: number): string {
  const total = scores.reduce(
    (sum, file) => ({
      killed: sum.killed + file.killed,
      timedOut: sum.timedOut + file.timedOut,
      survived: sum.survived + file.survived,
      noCoverage: sum.noCoverage + file.noCoverage,
    }),
    { killed: 0, timedOut: 0, survived: 0, noCoverage: 0 },
  );
  const detected = total.killed + total.timedOut;
  const all = detected + total.survived + total.noCoverage;
  const row = (name: string, s: Omit<FileScore, 'file' | 'score'>, score: number) =>
    `| ${name} | ${s.killed} | ${s.timedOut} | ${s.survived} | ${s.noCoverage} | ${score.toFixed(1)} % |`;
  return [
    `### ${target}`,
    '',
    `${new Date().toISOString().slice(0, 10)}, Node ${process.version}, ${cpus().length} cores, ${minutes.toFixed(0)} min.`,
    '',
    '| file | killed | timed out | survived | no coverage | score |',
    '| --- | --- | --- | --- | --- | --- |',
    ...scores.map((file) => row(`\`${file.file}\``, file, file.score)),
    row('**all**', total, all === 0 ? 100 : (detected / all) * 100),
  ].join('\n');
}

/** Every mutant no test noticed, one line each: where, which mutator, what it put there. */
function renderSurvivors(report: MutationReport): string {
  const lines = Object.entries(report.files)
    .sort(([a], [b]) => a.localeCompare(b))
    .flatMap(([file, { mutants }]) =>
      mutants
        .filter((mutant) => mutant.status === 'Survived' || mutant.status === 'NoCoverage')
        .sort((a, b) => a.location.start.line - b.location.start.line || a.location.start.column - b.location.start.column)
        .map((mutant) => {
          const { line, column } = mutant.location.start;
          const replacement = (mutant.replacement ?? '').replace(/\s+/g, ' ').replace(/`/g, "'");
          const shown = replacement.length > 70 ? `${replacement.slice(0, 69)}…` : replacement;
          const uncovered = mutant.status === 'NoCoverage' ? ' (no test covers it)' : '';
          return `- \`${file}:${line}:${column}\` ${mutant.mutatorName}: ${shown ? `\`${shown}\`` : '(emptied)'}${uncovered}`;
        }),
    );
  if (lines.length === 0) return 'No mutant survived.';
  return ['<details><summary>Surviving mutants</summary>', '', ...lines, '', '</details>'].join('\n');
}

/** Replaces this target's table between the page's markers, keeping the other target's. */
function recordOnPage(target: Target, table: string): void {
  const page = readFileSync(PAGE, 'utf8');
  const start = page.indexOf(START);
  const end = page.indexOf(END);
  if (start < 0 || end < start) throw new Error(`${PAGE} lost its ${START} … ${END} markers`);
  const tables = new Map<string, string>();
  for (const section of page.slice(start + START.length, end).split(/^(?=### )/m)) {
    const name = /^### ([\w-]+)/.exec(section.trim())?.[1];
    if (name) tables.set(name, section.trim());
  }
  tables.set(target, table);
  const body = TARGETS.filter((name) => tables.has(name)).map((name) => tables.get(name)).join('\n\n');
  writeFileSync(PAGE, `${page.slice(0, start + START.length)}\n${body}\n${page.slice(end)}`);
}
