import { rmSync } from 'node:fs';
import { chmod, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findFreePort, importEmbeddedPostgres, stopServerNow } from '../../scripts/embedded-postgres.js';
import { throwawayServerFlags, type TestServer } from './test-server.js';

// The owner's pid in the name lets a later run remove what a killed run left behind.
const WORK_DIR_PREFIX = 'mcp-task-store-test-pg-';
const LOG_LINES_KEPT = 50;

/** Starts PostgreSQL from the `embedded-postgres` binaries in a fresh temporary directory. */
export async function startEmbeddedServer(): Promise<TestServer> {
  const EmbeddedPostgres = await importEmbeddedPostgres();
  await removeWorkDirsOfDeadRuns();
  const workDir = await mkdtemp(join(tmpdir(), `${WORK_DIR_PREFIX}${process.pid}-`));
  // Run as root, embedded-postgres starts initdb and the server as the `postgres` user, which
  // must be able to create the data directory in here.
  await chmod(workDir, 0o777);
  const dataDir = join(workDir, 'data');
  const disarmExitCleanup = cleanUpOnExit(workDir, dataDir);
  const port = await findFreePort();
  const recentLog: string[] = [];
  const server = new EmbeddedPostgres({
    databaseDir: dataDir,
    user: 'postgres',
    password: 'postgres',
    port,
    persistent: false,
    postgresFlags: [
      ...throwawayServerFlags(),
      // TCP only, on the address the URL names: no socket file to collide on or leave behind.
      '-c', 'listen_addresses=127.0.0.1',
      '-c', 'unix_socket_directories=',
    ],
    onLog: (message) => {
      recentLog.push(message);
      if (recentLog.length > LOG_LINES_KEPT) recentLog.shift();
    },
    onError: (error) => console.error('embedded PostgreSQL:', error),
  });

  try {
    await server.initialise();
    await server.start();
  } catch (error) {
    // start() fails only once the server process has exited, so there is nothing to stop.
    disarmExitCleanup();
    await rm(workDir, { recursive: true, force: true });
    throw new Error(
      `embedded PostgreSQL did not start: ${String(error ?? 'the server exited')}\n` +
        `last server output:\n${recentLog.join('')}`,
      { cause: error },
    );
  }

  return {
    adminUrl: `postgres://postgres:postgres@127.0.0.1:${port}/postgres`,
    description: `embedded, on 127.0.0.1:${port}`,
    async stop() {
      disarmExitCleanup();
      await server.stop();
      await rm(workDir, { recursive: true, force: true });
    },
  };
}

/**
 * Stops the server and removes its directory if the process exits without teardown, as Vitest
 * does on Ctrl-C or SIGTERM. Returns the function that disarms this.
 */
function cleanUpOnExit(workDir: string, dataDir: string): () => void {
  const cleanUp = () => {
    stopServerNow(dataDir);
    try {
      rmSync(workDir, { recursive: true, force: true });
    } catch {
      // The next run removes what is left.
    }
  };
  // Vitest's own `exit` listener calls process.exit() again, which skips every listener after it.
  process.prependOnceListener('exit', cleanUp);
  return () => process.off('exit', cleanUp);
}

async function removeWorkDirsOfDeadRuns(): Promise<void> {
  const names = await readdir(tmpdir());
  const orphaned = names.filter(
    (name) => name.startsWith(WORK_DIR_PREFIX) && !isProcessAlive(ownerPid(name)),
  );
  // Best effort: a directory this user may not remove belongs to someone else's run.
  await Promise.allSettled(
    orphaned.map((name) => rm(join(tmpdir(), name), { recursive: true, force: true })),
  );
}

function ownerPid(workDirName: string): number {
  return Number.parseInt(workDirName.slice(WORK_DIR_PREFIX.length), 10);
}

function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but belongs to another user.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
