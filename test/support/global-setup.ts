import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { withoutPassword } from './connection-url.js';
import { mayHaveDockerEngine, startContainerServer } from './container-server.js';
import { startEmbeddedServer } from './embedded-server.js';
import type { TestServer } from './test-server.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Superuser connection string of the run's PostgreSQL server; see test-database.ts. */
    testPostgresAdminUrl: string;
  }
}

// DROP DATABASE ... WITH (FORCE), which test databases are dropped with, arrived in 13.
const OLDEST_SUPPORTED_SERVER = 130000;

/**
 * Provides one PostgreSQL server for the whole run: TEST_DATABASE_URL if set, else a Docker
 * container if an engine is reachable, else embedded PostgreSQL. TEST_POSTGRES=embedded or
 * TEST_POSTGRES=docker makes the choice instead. A failure throws: Vitest prints it and exits 1.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const startedAt = performance.now();
  const server = await startTestServer();
  try {
    const version = await checkServer(server.adminUrl);
    project.provide('testPostgresAdminUrl', server.adminUrl);
    const seconds = ((performance.now() - startedAt) / 1000).toFixed(2);
    console.log(
      `test database: PostgreSQL ${version}, ${server.description} (ready in ${seconds} s)`,
    );
  } catch (error) {
    await server.stop();
    throw error;
  }
  return () => server.stop();
}

const SERVER_CHOICES = ['embedded', 'docker'] as const;

async function startTestServer(): Promise<TestServer> {
  const url = process.env.TEST_DATABASE_URL;
  if (url) {
    return {
      adminUrl: url,
      description: `from TEST_DATABASE_URL ${withoutPassword(url)}`,
      stop: async () => {},
    };
  }
  const choice = process.env.TEST_POSTGRES;
  if (choice !== undefined && !(SERVER_CHOICES as readonly string[]).includes(choice)) {
    throw new Error(`TEST_POSTGRES must be one of ${SERVER_CHOICES.join(', ')} (or unset), not ${choice}`);
  }
  if (choice === 'docker') return startContainerServer();
  if (choice === undefined && mayHaveDockerEngine()) {
    try {
      return await startContainerServer();
    } catch (error) {
      console.warn(
        `test database: no Docker container (${String(error)}); using embedded PostgreSQL`,
      );
    }
  }
  return startEmbeddedServer();
}

/** Connects once, so a wrong URL or an old server fails the run here, not in every test file. */
async function checkServer(adminUrl: string): Promise<string> {
  const client = new pg.Client({ connectionString: adminUrl });
  try {
    await client.connect();
    const { rows } = await client.query<{ version: string; versionNumber: number }>(
      `select current_setting('server_version') as version,
              current_setting('server_version_num')::int as "versionNumber"`,
    );
    const { version, versionNumber } = rows[0]!;
    if (versionNumber < OLDEST_SUPPORTED_SERVER) {
      throw new Error(`the tests need PostgreSQL 13 or newer; the server runs ${version}`);
    }
    return version;
  } catch (error) {
    throw new Error(`test database: cannot use ${withoutPassword(adminUrl)}: ${String(error)}`, {
      cause: error,
    });
  } finally {
    await client.end();
  }
}
