/**
 * PgBouncer in transaction pooling mode in front of the test database, from the machine's
 * `pgbouncer` binary (Debian's package; .ci/run installs it when it is missing).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import { delimiter, join } from 'node:path';
import pg from 'pg';
import { findFreePort } from '../../scripts/embedded-postgres.js';
import { within } from './time.js';

/** The pgbouncer executable on PATH or where Debian puts it, or null. */
export function findPgBouncer(): string | null {
  const directories = [...(process.env.PATH ?? '').split(delimiter), '/usr/sbin', '/usr/local/sbin', '/usr/bin'];
  for (const directory of directories.filter(Boolean)) {
    const candidate = join(directory, 'pgbouncer');
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return null;
}

export interface PgBouncer {
  /** Connection string of the database through PgBouncer. */
  readonly url: string;
  stop(): Promise<void>;
}

/** Starts PgBouncer in front of the database `targetUrl` names, with `poolSize` server connections. */
export async function startPgBouncer(binary: string, targetUrl: string, poolSize: number): Promise<PgBouncer> {
  const target = new URL(targetUrl);
  const database = decodeURIComponent(target.pathname.slice(1));
  const port = await findFreePort();
  const workDir = await mkdtemp(join(tmpdir(), 'mcp-task-store-pgbouncer-'));
  await chmod(workDir, 0o755);
  const connection = [
    `host=${target.hostname}`,
    `port=${target.port || 5432}`,
    `dbname=${database}`,
    `user=${decodeURIComponent(target.username) || 'postgres'}`,
    ...(target.password ? [`password=${decodeURIComponent(target.password)}`] : []),
  ].join(' ');
  const config = join(workDir, 'pgbouncer.ini');
  await writeFile(
    config,
    [
      '[databases]',
      `${database} = ${connection}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      // Clients need no password: only this test connects, on loopback, and the server login is in the line above.
      'auth_type = any',
      'pool_mode = transaction',
      `default_pool_size = ${poolSize}`,
      'max_client_conn = 500',
      'ignore_startup_parameters = extra_float_digits',
    ].join('\n'),
    { mode: 0o644 },
  );
  // PgBouncer refuses to run as root; -u makes it switch to an ordinary user.
  const args = userInfo().uid === 0 ? ['-u', process.env.PGBOUNCER_USER ?? 'postgres', config] : [config];
  const child = spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const output: string[] = [];
  child.stdout!.on('data', (chunk: Buffer) => output.push(chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => output.push(chunk.toString()));
  const killOnExit = () => child.kill('SIGKILL');
  process.prependOnceListener('exit', killOnExit);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));

  const url = `postgres://${encodeURIComponent(decodeURIComponent(target.username) || 'postgres')}@127.0.0.1:${port}/${encodeURIComponent(database)}`;
  const stop = async () => {
    process.off('exit', killOnExit);
    if (child.exitCode === null) child.kill('SIGTERM');
    await exited;
    await rm(workDir, { recursive: true, force: true });
  };
  try {
    await within('PgBouncer accepting connections', acceptsConnections(url, child), 10_000);
  } catch (error) {
    await stop();
    throw new Error(`PgBouncer (${binary}) did not start: ${String(error)}\n${output.join('')}`, { cause: error });
  }
  return { url, stop };
}

async function acceptsConnections(url: string, child: ChildProcess): Promise<void> {
  for (;;) {
    if (child.exitCode !== null) throw new Error(`pgbouncer exited with code ${child.exitCode}`);
    const client = new pg.Client({ connectionString: url });
    client.on('error', () => {});
    try {
      await client.connect();
      await client.query('SELECT 1');
      return;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 50));
    } finally {
      await client.end().catch(() => {});
    }
  }
}
