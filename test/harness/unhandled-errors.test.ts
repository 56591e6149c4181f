/**
 * The suite's promise that a test process crashing on an unhandled error fails the run, checked
 * against Vitest itself: the fixtures in fixtures/ each pass their tests but leave something
 * unhandled, and a Vitest run of them with the project's own settings (fixtures/vitest.config.ts)
 * must fail and name each one. A run of the passing fixture alone would exit 0, which the same
 * child run shows for its file.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const CONFIG = 'test/harness/fixtures/vitest.config.ts';
const VITEST = 'node_modules/vitest/vitest.mjs';

interface Run {
  exitCode: number;
  output: string;
}

function vitest(args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, [VITEST, 'run', '--config', CONFIG, '--maxWorkers=2', '--minWorkers=1', ...args], { timeout: 120_000, maxBuffer: 16 * 1024 * 1024, env: plainOutput() }, (error, stdout, stderr) => {
      const exitCode = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
      resolve({ exitCode, output: `${stdout}\n${stderr}` });
    });
  });
}

/** The environment without colour codes in the output. */
function plainOutput(): NodeJS.ProcessEnv {
  const { FORCE_COLOR: _forced, ...env } = process.env;
  return { ...env, NO_COLOR: '1' };
}

interface JsonReport {
  testResults: { name: string; assertionResults: { title: string; status: string; failureMessages: string[] }[] }[];
}

describe('an unhandled error in a test process fails the run', () => {
  it('rejections, exceptions, error events and process.exit() in a forked worker each fail the run; a killed worker does too', async () => {
    const reportDir = await mkdtemp(join(tmpdir(), 'harness-report-'));
    try {
      const reportFile = join(reportDir, 'report.json');
      const [fixtures, killed] = await Promise.all([
        vitest(['--exclude', '**/killed-worker.fixture.ts', '--reporter=default', '--reporter=json', `--outputFile.json=${reportFile}`]),
        vitest(['test/harness/fixtures/killed-worker.fixture.ts']),
      ]);

      expect(fixtures.exitCode, fixtures.output).toBe(1);
      const report = JSON.parse(await readFile(reportFile, 'utf8')) as JsonReport;
      const results = Object.fromEntries(
        report.testResults.flatMap((file) => file.assertionResults.map((test) => [`${file.name.split('/').pop()}: ${test.title}`, test.status])),
      );
      // Every test passed on its own terms, except the one that called process.exit().
      expect(results).toStrictEqual({
        'passing.fixture.ts: passes': 'passed',
        'unhandled-rejection.fixture.ts: passes, but leaves a rejection nobody handles': 'passed',
        'uncaught-exception.fixture.ts: passes, but a timer throws meanwhile': 'passed',
        "error-event.fixture.ts: passes, but a socket with no 'error' listener fails meanwhile": 'passed',
        'rejection-in-teardown.fixture.ts: passes': 'passed',
        'process-exit.fixture.ts: passes': 'passed',
        'process-exit.fixture.ts: calls process.exit(0), as a careless dependency might': 'failed',
      });
      expect(fixtures.output).toContain('process.exit unexpectedly called with "0"');
      // …and each unhandled error is reported against the file it came from.
      for (const [file, error] of [
        ['unhandled-rejection.fixture.ts', 'fixture: unhandled rejection'],
        ['uncaught-exception.fixture.ts', 'fixture: uncaught exception'],
        ['error-event.fixture.ts', 'connect ECONNREFUSED 127.0.0.1:1'],
        ['rejection-in-teardown.fixture.ts', 'fixture: rejected while the file tears down'],
      ] as const) {
        expect(fixtures.output, file).toContain(error);
        expect(fixtures.output, file).toMatch(new RegExp(`originated in ".*${file.replaceAll('.', '\\.')}" test file`));
      }

      expect(killed.exitCode, killed.output).not.toBe(0);
    } finally {
      await rm(reportDir, { recursive: true, force: true });
    }
  }, 240_000);
});
