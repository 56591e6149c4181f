/**
 * A test run whose database cannot be set up fails loudly: Vitest, run here as a user runs it,
 * exits non-zero and prints the cause, in a line that says what to do.
 */
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findFreePort } from '../../scripts/embedded-postgres.js';
import { envWithoutDatabase, PROJECT_ROOT, run, type RunResult } from './project-copy.js';

const asRoot = process.getuid?.() === 0;
const VITEST = join(PROJECT_ROOT, 'node_modules', 'vitest', 'vitest.mjs');
let scratch: string;

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'mcp-task-store-setup-'));
});

afterAll(async () => {
  await rm(scratch, { recursive: true, force: true, maxRetries: 3 });
});

/** `vitest run` on one small test file, with `env` deciding where its database comes from. */
async function runVitest(env: NodeJS.ProcessEnv): Promise<RunResult & { output: string }> {
  const childEnv = envWithoutDatabase({ ...env, NO_COLOR: '1' });
  delete childEnv.FORCE_COLOR;
  // This worker's own Vitest variables would confuse the child run.
  for (const name of Object.keys(childEnv)) if (name.startsWith('VITEST')) delete childEnv[name];
  const result = await run(process.execPath, [VITEST, 'run', 'test/smoke.test.ts'], { cwd: PROJECT_ROOT, env: childEnv });
  return { ...result, output: result.stdout + result.stderr };
}

// Each case is a whole Vitest start, which takes seconds on a loaded machine.
describe('a failing test database setup', { timeout: 300_000 }, () => {
  it.concurrent('names the unreachable TEST_DATABASE_URL (without its password) and the error', async () => {
    const port = await findFreePort(); // nothing listens there
    const result = await runVitest({ TEST_DATABASE_URL: `postgres://postgres:hunter2@127.0.0.1:${port}/postgres` });
    expect(result.code).not.toBe(0);
    expect(result.output).toContain(`test database: cannot use postgres://postgres@127.0.0.1:${port}/postgres: Error: connect ECONNREFUSED`);
    expect(result.output).not.toContain('hunter2');
  });

  it.concurrent('says in one line why embedded PostgreSQL did not start and what to do instead', async () => {
    // Run as root, a temporary directory closed to other users defeats the server's account (the
    // failure a checkout in root's home directory used to meet); for anyone else, a temporary
    // "directory" that is a file.
    const temporary = join(scratch, 'tmp');
    const reason = asRoot
      ? /the (postgres|nobody) account, which runs the server because PostgreSQL refuses to run as root, cannot enter or write \S*tmp\S* \(.*\): a directory above it is closed to other users/
      : /ENOTDIR: not a directory, \w+ '[^']*tmp'/;
    if (asRoot) await mkdir(temporary, { mode: 0o700 });
    else await writeFile(temporary, '');
    const result = await runVitest({ TEST_POSTGRES: 'embedded', TMPDIR: temporary });
    expect(result.code).not.toBe(0);
    const line = result.output.split('\n').find((text) => text.includes('embedded PostgreSQL did not start: '));
    expect(line).toMatch(
      new RegExp(
        `embedded PostgreSQL did not start: ${reason.source}\\. To use a PostgreSQL 13\\+ server of your own instead, ` +
          'set TEST_DATABASE_URL=postgres://user:password@host:5432/postgres$',
      ),
    );
    // The failed run removed its directory, password file included.
    if (asRoot) expect(await readdir(temporary)).toEqual([]);
  });
});
