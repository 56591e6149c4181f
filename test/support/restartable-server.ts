/**
 * An embedded PostgreSQL server of a test file's own, which the test may stop and start again on
 * the same port and data, as an operator restarting the database would. The run's shared server is
 * never stopped: other files are using it.
 */
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findFreePort, importEmbeddedPostgres, stopServerNow } from '../../scripts/embedded-postgres.js';
import { throwawayServerFlags } from './test-server.js';

export interface RestartableServer {
  /** Superuser URL of the `postgres` database. */
  readonly adminUrl: string;
  /** Fast shutdown (SIGINT): open sessions are terminated, committed data is kept. */
  stop(): Promise<void>;
  /** Starts the server again on the same port and data. */
  start(): Promise<void>;
  /** Stops the server if it runs and deletes its data. */
  remove(): Promise<void>;
}

export async function startRestartableServer(): Promise<RestartableServer> {
  const EmbeddedPostgres = await importEmbeddedPostgres();
  const workDir = await mkdtemp(join(tmpdir(), 'mcp-task-store-restart-'));
  // Run as root, embedded-postgres runs the server as `postgres`, which must create its data here.
  await chmod(workDir, 0o777);
  const dataDir = join(workDir, 'data');
  const onExit = () => stopServerNow(dataDir);
  process.prependOnceListener('exit', onExit);
  const port = await findFreePort();
  const log: string[] = [];
  const server = new EmbeddedPostgres({
    databaseDir: dataDir,
    user: 'postgres',
    password: 'postgres',
    port,
    persistent: true,
    postgresFlags: [...throwawayServerFlags(), '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='],
    onLog: (line) => {
      log.push(line);
      if (log.length > 50) log.shift();
    },
    onError: (error) => log.push(`error: ${String(error)}`),
  });
  const start = async () => {
    try {
      await server.start();
    } catch (error) {
      throw new Error(`the restartable PostgreSQL did not start: ${String(error)}\n${log.join('')}`, { cause: error });
    }
  };
  await server.initialise();
  await start();
  return {
    adminUrl: `postgres://postgres:postgres@127.0.0.1:${port}/postgres`,
    stop: () => server.stop(),
    start,
    async remove() {
      await server.stop();
      process.off('exit', onExit);
      await rm(workDir, { recursive: true, force: true });
    },
  };
}
