import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  EmbeddedPostgresError,
  startEmbeddedPostgres,
  stopServerNow,
  type EmbeddedPostgres,
} from '../../scripts/embedded-postgres.js';
import { throwawayServerSettings, type TestServer } from './test-server.js';

// The owner's pid in the name lets a later run remove what a killed run left behind.
const WORK_DIR_PREFIX = 'mcp-task-store-test-pg-';

/** Starts embedded PostgreSQL (see scripts/embedded-postgres.ts) in a fresh temporary directory. */
export async function startEmbeddedServer(): Promise<TestServer> {
  let server: EmbeddedPostgres;
  let workDir: string | undefined;
  let disarmExitCleanup = () => {};
  try {
    await removeWorkDirsOfDeadRuns();
    workDir = await mkdtemp(join(tmpdir(), `${WORK_DIR_PREFIX}${process.pid}-`));
    const dataDir = join(workDir, 'data');
    disarmExitCleanup = cleanUpOnExit(workDir, dataDir);
    server = await startEmbeddedPostgres({
      dataDir,
      password: randomBytes(16).toString('hex'),
      settings: throwawayServerSettings,
      durable: false,
    });
  } catch (error) {
    // The server process has exited if start failed, so there is nothing to stop.
    disarmExitCleanup();
    if (workDir) await rm(workDir, { recursive: true, force: true });
    throw startupFailure(error);
  }
  return {
    adminUrl: server.url,
    description: server.description,
    async stop() {
      disarmExitCleanup();
      await server.stop();
      await rm(workDir, { recursive: true, force: true });
    },
  };
}

/** One line with the reason and the way out, then whatever the server printed. */
function startupFailure(error: unknown): Error {
  const reason = error instanceof Error ? error.message : String(error);
  const output = error instanceof EmbeddedPostgresError && error.output ? `\nlast server output:\n${error.output}` : '';
  return new Error(
    `embedded PostgreSQL did not start: ${reason}. To use a PostgreSQL 13+ server of your own instead, ` +
      `set TEST_DATABASE_URL=postgres://user:password@host:5432/postgres${output}`,
    { cause: error },
  );
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

/** Stops the servers of runs that were killed (SIGKILL skips every exit hook) and removes their files. */
async function removeWorkDirsOfDeadRuns(): Promise<void> {
  const names = await readdir(tmpdir());
  const orphaned = names.filter(
    (name) => name.startsWith(WORK_DIR_PREFIX) && !isProcessAlive(ownerPid(name)),
  );
  // Best effort: a directory this user may not remove belongs to someone else's run.
  await Promise.allSettled(
    orphaned.map((name) => {
      stopServerNow(join(tmpdir(), name, 'data'));
      return rm(join(tmpdir(), name), { recursive: true, force: true });
    }),
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
