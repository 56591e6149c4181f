/**
 * The package as npm users get it: `npm pack` on a fresh copy of the project (which builds it
 * first), the tarball installed into an empty project. One per test file that needs it: packing
 * builds the package (a full TypeScript compile) and the install reads npm's cache, half a minute
 * or more on a loaded machine.
 */
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import { copyProject, PROJECT_ROOT, run, type RunResult } from './project-copy.js';

export interface Manifest {
  name: string;
  main?: string;
  types?: string;
  bin?: Record<string, string>;
  exports: Record<string, unknown>;
  peerDependencies?: Record<string, string>;
}

export const MANIFEST = JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8')) as Manifest;

export interface InstalledPackage {
  /** The empty project the tarball was installed into. */
  consumer: string;
  /** The files npm packed, as paths inside the package. */
  packedFiles: string[];
  /** Removes the copy, the tarball and the consumer. */
  remove(): Promise<void>;
}

/** npm's own variables from the `npm test` that runs us would make the child npm act on this project. */
export function npmEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const name of Object.keys(env)) {
    if (/^npm_(lifecycle|package|command|config_local_prefix)/.test(name)) delete env[name];
  }
  return env;
}

export function succeeded(result: RunResult, what: string): RunResult {
  expect(result, `${what} failed:\n${result.stdout}\n${result.stderr}`).toMatchObject({ code: 0 });
  return result;
}

/** Packs the project and installs the tarball, with the package's peer dependencies if `withPeers`. */
export async function packAndInstall(options: { withPeers: boolean }): Promise<InstalledPackage> {
  const root = await mkdtemp(join(tmpdir(), 'mcp-task-store-package-'));
  const clone = join(root, 'clone');
  await copyProject(clone);
  await symlink(join(PROJECT_ROOT, 'node_modules'), join(clone, 'node_modules'), 'dir');
  const packed = succeeded(await run('npm', ['pack', '--json', '--pack-destination', root], { cwd: clone, env: npmEnv() }), 'npm pack');
  // The prepare script's output comes first; npm's JSON report is the rest.
  const [report] = JSON.parse(packed.stdout.slice(packed.stdout.search(/^\[/m))) as [{ filename: string; files: { path: string }[] }];

  const consumer = join(root, 'consumer');
  await mkdir(join(consumer, 'src'), { recursive: true });
  await writeFile(join(consumer, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
  const peers = options.withPeers ? Object.entries(MANIFEST.peerDependencies ?? {}).map(([name, range]) => `${name}@${range}`) : [];
  succeeded(
    await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', join(root, report.filename), ...peers], {
      cwd: consumer,
      env: npmEnv(),
    }),
    'npm install of the tarball',
  );
  return {
    consumer,
    packedFiles: report.files.map((file) => file.path),
    remove: () => rm(root, { recursive: true, force: true, maxRetries: 3 }),
  };
}
