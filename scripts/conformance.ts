/**
 * `npm run conformance`: the official MCP conformance suite's ten `tasks-*` server scenarios
 * against `npm start`, first one instance, then two instances on one database behind a round-robin
 * proxy (so a client's consecutive requests alternate instances). Every check must pass; the
 * script prints one line per scenario and exits non-zero otherwise.
 *
 * The database is DATABASE_URL when set, else a throwaway embedded PostgreSQL. The suite needs
 * Node 22, which `npx` brings from the `node` package. `--instances=1` or `--instances=2` runs one
 * of the two passes.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { findFreePort } from './embedded-postgres.js';
import { openScriptDatabase } from './database.js';
import { startRoundRobinProxy } from './server/round-robin-proxy.js';

const SUITE = '@modelcontextprotocol/conformance@0.2.0-alpha.12';
export const TASK_SCENARIOS = [
  'tasks-lifecycle',
  'tasks-capability-negotiation',
  'tasks-dispatch-and-envelope',
  'tasks-mrtr-composition',
  'tasks-mrtr-input',
  'tasks-request-headers',
  'tasks-request-state-removal',
  'tasks-required-task-error',
  'tasks-status-notifications',
  'tasks-wire-fields',
];
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const START_TIMEOUT_MS = 180_000;
const SCENARIO_TIMEOUT_MS = 300_000;

interface Instance {
  url: string;
  process: ChildProcess;
}

/** `npm start` on a free port, resolved once it prints its ready line. */
async function startInstance(databaseUrl: string): Promise<Instance> {
  const port = await findFreePort();
  const child = spawn('npm', ['start'], {
    cwd: ROOT,
    env: { ...process.env, PORT: String(port), DATABASE_URL: databaseUrl, MCP_DEMO_RUN: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
    // Its own process group, so stopping it reaches the server behind npm.
    detached: true,
  });
  let output = '';
  child.stderr!.on('data', (chunk) => (output += chunk));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`npm start did not get ready within ${START_TIMEOUT_MS} ms:\n${output}`)), START_TIMEOUT_MS);
    child.stdout!.on('data', (chunk) => {
      output += chunk;
      if (output.includes('ready: ')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`npm start exited (${code}) before it was ready:\n${output}`));
    });
  });
  return { url: `http://127.0.0.1:${port}/mcp`, process: child };
}

async function stopInstance(instance: Instance): Promise<void> {
  if (instance.process.exitCode !== null) return;
  const exited = new Promise<void>((resolve) => instance.process.once('exit', () => resolve()));
  process.kill(-instance.process.pid!, 'SIGTERM');
  await exited;
}

interface ScenarioResult {
  scenario: string;
  passed: boolean;
  summary: string;
  output: string;
}

/** One scenario; it passes when the suite exits 0 and reports no failed check. */
function runScenario(url: string, scenario: string): Promise<ScenarioResult> {
  return new Promise((resolve) => {
    const child = spawn('npx', ['-y', '-p', 'node@22', '-p', SUITE, '--', 'conformance', 'server', '--url', url, '--scenario', scenario], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), SCENARIO_TIMEOUT_MS);
    child.once('exit', (code) => {
      clearTimeout(timer);
      const summary = output.match(/^Passed: .*$/m)?.[0] ?? 'no summary line';
      const failed = Number(summary.match(/(\d+) failed/)?.[1] ?? NaN);
      resolve({ scenario, passed: code === 0 && failed === 0, summary, output });
    });
  });
}

async function runPass(label: string, url: string): Promise<boolean> {
  console.log(`\n${label}: ${url}`);
  let allPassed = true;
  for (const scenario of TASK_SCENARIOS) {
    const result = await runScenario(url, scenario);
    console.log(`  ${result.passed ? 'pass' : 'FAIL'}  ${scenario.padEnd(30)} ${result.summary}`);
    if (!result.passed) {
      allPassed = false;
      console.log(result.output.slice(result.output.indexOf('=== Failed Checks ===')).split('\n').slice(0, 40).join('\n'));
    }
  }
  return allPassed;
}

async function main(): Promise<void> {
  const only = process.argv.find((arg) => arg.startsWith('--instances='))?.split('=')[1];
  const database = await openScriptDatabase();
  console.log(`database: ${database.description}`);
  const instances: Instance[] = [];
  let passed = true;
  try {
    if (only !== '2') {
      instances.push(await startInstance(database.connectionString));
      passed = (await runPass('one npm start', instances[0]!.url)) && passed;
    }
    if (only !== '1') {
      while (instances.length < 2) instances.push(await startInstance(database.connectionString));
      const proxy = await startRoundRobinProxy(instances.map((instance) => instance.url));
      try {
        passed = (await runPass('two npm start on one database behind a round-robin proxy', proxy.url)) && passed;
        console.log(`  requests per instance: ${proxy.served.join(', ')}`);
      } finally {
        await proxy.close();
      }
    }
  } finally {
    await Promise.all(instances.map(stopInstance));
    await database.stop();
  }
  console.log(passed ? '\nconformance: every tasks-* scenario passed' : '\nconformance: FAILED');
  process.exitCode = passed ? 0 : 1;
}

await main();
