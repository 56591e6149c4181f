import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, inject } from 'vitest';
import { withDatabaseName } from './connection-url.js';
import { sleep } from './time.js';

export interface TestDatabase {
  /** Connects to this database alone; hand it to the code under test. */
  readonly connectionString: string;
  /** Drops the database, ending any connection still open to it. */
  drop(): Promise<void>;
}

/**
 * Creates an empty database of its own on the run's server (started by global-setup.ts), so test
 * files running in parallel never see each other's tables. The caller must `drop()` it.
 */
export async function createTestDatabase(): Promise<TestDatabase> {
  const adminUrl = inject('testPostgresAdminUrl');
  if (!adminUrl) {
    throw new Error(
      'no test PostgreSQL server: run the tests with vitest.config.ts, whose global setup ' +
        'starts one',
    );
  }
  // Lowercase letters and digits only: a valid identifier without quoting, unique across files.
  const name = `test_${randomBytes(8).toString('hex')}`;
  await runAsAdmin(adminUrl, (client) => client.query(`create database ${name}`));
  return {
    connectionString: withDatabaseName(adminUrl, name),
    drop: () => runAsAdmin(adminUrl, (client) => dropDatabase(client, name)),
  };
}

/**
 * Gives the calling test file, or `describe` block, a database of its own: created in `beforeAll`,
 * dropped in `afterAll`. Call it before registering hooks that use the database, so that their
 * `afterAll` (closing pools, stopping stores) runs before the drop.
 *
 * ```ts
 * const database = useTestDatabase();
 * test('…', async () => {
 *   const pool = new pg.Pool({ connectionString: database.connectionString });
 * });
 * ```
 */
export function useTestDatabase(): { readonly connectionString: string } {
  let database: TestDatabase | undefined;
  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(async () => {
    await database?.drop();
  });
  return {
    get connectionString() {
      if (database === undefined) {
        throw new Error(
          'useTestDatabase(): the database exists only once beforeAll has run; ' +
            'read connectionString inside tests and hooks',
        );
      }
      return database.connectionString;
    },
  };
}

async function runAsAdmin(adminUrl: string, run: (client: pg.Client) => Promise<unknown>): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await run(client);
  } finally {
    await client.end();
  }
}

/** How long a drop waits for connections that are closing anyway. */
const CLOSING_CONNECTIONS_MS = 2_000;

/**
 * Drops the database once the connections still closing are gone (a pool's `end()` resolves before
 * its sockets close), then ends any left open. A connection terminated while it closes reaches its
 * pool as an 'error' event, which a test's pool with no listener would raise as an uncaught error.
 */
async function dropDatabase(client: pg.Client, name: string): Promise<void> {
  const connected = async () =>
    (await client.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1', [name])).rows[0]!.n;
  const deadline = Date.now() + CLOSING_CONNECTIONS_MS;
  while ((await connected()) > 0 && Date.now() < deadline) await sleep(20);
  await client.query(`drop database if exists ${name} with (force)`);
}
