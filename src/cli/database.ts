/**
 * The CLI's connection to the store's schema: a small pool of its own, named in pg_stat_activity,
 * that gives up on a server that does not answer instead of hanging; and the check that the
 * schema is migrated, before a command reads tables that may not be there.
 */
import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { toBackendError } from '../postgres/backend-error.js';
import { dialectPool, guardPool } from '../postgres/pool.js';
import { readSchemaState, type SchemaState } from '../postgres/schema-version.js';
import { storeDatabase, type StoreDatabase, type TaskDatabase } from '../postgres/tables.js';
import { BIN, CliError, type CommandContext } from './command.js';

const CONNECT_TIMEOUT_MS = 10_000;
export const CLI_APPLICATION_NAME = 'mcp-task-store-cli';

export interface CliDatabase extends StoreDatabase {
  readonly pool: pg.Pool;
}

/** Runs `work` on a fresh pool of `max` connections, ended afterwards whatever happens. */
export async function withDatabase<T>(context: CommandContext, max: number, work: (database: CliDatabase) => Promise<T>): Promise<T> {
  const pool = new pg.Pool({
    connectionString: context.connectionString,
    max,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    application_name: CLI_APPLICATION_NAME,
  });
  guardPool(pool);
  const db = new Kysely<TaskDatabase>({ dialect: new PostgresDialect({ pool: dialectPool(pool, { preparedStatements: false }) }) });
  try {
    return await work({ ...storeDatabase(db, context.schema), pool });
  } catch (error) {
    throw error instanceof CliError ? error : toBackendError(error, context.connectionString);
  } finally {
    await db.destroy();
    await pool.end();
  }
}

/**
 * The schema's state, refused when the tables a command reads may be missing: never migrated,
 * or (unless `allowBehind`, for `status`) behind this version of the package.
 */
export async function requireMigrated(database: CliDatabase, options: { allowBehind: boolean }): Promise<SchemaState> {
  const state = await readSchemaState(database.db, database.schema);
  const migrate = `run ${BIN} migrate --schema ${database.schema}`;
  if (state.state === 'unmigrated') {
    throw new CliError('failure', `schema "${database.schema}" was never migrated: ${migrate}`);
  }
  if (state.state === 'behind' && !options.allowBehind) {
    throw new CliError('failure', `schema "${database.schema}" is behind this version of the package (not applied: ${state.pending.join(', ')}): ${migrate}`);
  }
  return state;
}
