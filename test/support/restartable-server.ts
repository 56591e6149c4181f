/**
 * An embedded PostgreSQL server of a test file's own, which the test may stop and start again on
 * the same port and data, as an operator restarting the database would. The run's shared server is
 * never stopped: other files are using it.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEmbeddedPostgres, stopServerNow, type EmbeddedPostgres } from '../../scripts/embedded-postgres.js';
import { throwawayServerSettings } from './test-server.js';

export interface RestartableServer {
  /** Superuser URL of the `postgres` database. */
  readonly adminUrl: string;
  /** Fast shutdown (SIGINT): open sessions are terminated, committed data is kept. */
  stop(): Promise<void>;
  /** Starts the server again on the same port and data. */
  start(): Promise<void>;
  /** Starts it if a test left it stopped (one that failed during its outage), for the next test. */
  ensureStarted(): Promise<void>;
  /** Stops the server if it runs and deletes its data. */
  remove(): Promise<void>;
}

export async function startRestartableServer(): Promise<RestartableServer> {
  const workDir = await mkdtemp(join(tmpdir(), 'mcp-task-store-restart-'));
  const dataDir = join(workDir, 'data');
  const onExit = () => stopServerNow(dataDir);
  process.prependOnceListener('exit', onExit);
  const options = { dataDir, password: 'postgres', settings: throwawayServerSettings, durable: false };
  let server: EmbeddedPostgres = await startEmbeddedPostgres(options);
  let running = true;
  const port = server.port;
  const start = async () => {
    server = await startEmbeddedPostgres({ ...options, port });
    running = true;
  };
  return {
    adminUrl: server.url,
    async stop() {
      running = false;
      await server.stop();
    },
    start,
    async ensureStarted() {
      if (!running) await start();
    },
    async remove() {
      await server.stop();
      process.off('exit', onExit);
      await rm(workDir, { recursive: true, force: true });
    },
  };
}
