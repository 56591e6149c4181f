/**
 * Applies the numbered SQL files in `migrations/` with Kysely's Migrator. The same provider backs
 * `kysely.config.ts`, so `npx kysely migrate:latest` and {@link migrate} run identical SQL.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Kysely, Migrator, PostgresDialect, sql, type Migration, type MigrationProvider, type MigratorProps } from 'kysely';
import pg from 'pg';
import { toBackendError } from './backend-error.js';
import { createPool, dialectPool, guardPool } from './pool.js';
import { notificationChannel, quoteIdentifier, quoteLiteral, validateSchemaName } from './schema-name.js';

export const MIGRATIONS_DIRECTORY = fileURLToPath(new URL('../../migrations/', import.meta.url));

/** Kysely's bookkeeping tables live in the store's own schema, so two schemas never interfere. */
const MIGRATION_TABLE = 'kysely_migration';
const MIGRATION_LOCK_TABLE = 'kysely_migration_lock';

/** Fills the two placeholders a migration file may contain. */
export function renderMigration(source: string, schema: string): string {
  return source
    .replaceAll('{{schema}}', quoteIdentifier(schema))
    .replaceAll('{{channel}}', quoteLiteral(notificationChannel(schema)));
}

/** Each `NNNN_name.sql` file is one migration, named after the file, applied in name order. */
class SqlFileMigrationProvider implements MigrationProvider {
  constructor(private readonly schema: string, private readonly directory = MIGRATIONS_DIRECTORY) {}

  async getMigrations(): Promise<Record<string, Migration>> {
    const files = (await readdir(this.directory)).filter((file) => /^\d{4}_[a-z0-9_]+\.sql$/.test(file)).sort();
    const migrations: Record<string, Migration> = {};
    for (const file of files) {
      const source = renderMigration(await readFile(join(this.directory, file), 'utf8'), this.schema);
      migrations[file.replace(/\.sql$/, '')] = {
        // No bound parameters, so pg sends the file as one simple query: every statement in it runs.
        up: async (db) => {
          await sql.raw(source).execute(db);
        },
      };
    }
    return migrations;
  }
}

/** What the Migrator needs besides a database, shared by {@link migrate} and kysely.config.ts. */
export function migratorOptions(schema: string): Omit<MigratorProps, 'db'> {
  return {
    provider: new SqlFileMigrationProvider(schema),
    migrationTableSchema: schema,
    migrationTableName: MIGRATION_TABLE,
    migrationLockTableName: MIGRATION_LOCK_TABLE,
  };
}

export interface MigrateOptions {
  pool?: pg.Pool;
  connectionString?: string;
  /** Default 'mcp_tasks'. */
  schema?: string;
}

/**
 * Applies every pending migration to `schema`. Safe to run from several processes at once: Kysely
 * takes an advisory lock, and the losers find nothing left to apply. Returns the migrations this
 * call applied ([] when none were pending).
 */
export async function migrate(options: MigrateOptions): Promise<{ applied: string[] }> {
  const schema = validateSchemaName(options.schema);
  const pool = options.pool ?? createPool(options.connectionString, 1);
  const stopGuardingPool = options.pool ? guardPool(options.pool) : () => {};
  const db = new Kysely<unknown>({
    dialect: new PostgresDialect({ pool: dialectPool(pool, { preparedStatements: false }) }),
  });
  try {
    const { results, error } = await new Migrator({ db, ...migratorOptions(schema) }).migrateToLatest();
    if (error) throw toBackendError(error, options.connectionString);
    return { applied: (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName) };
  } catch (error) {
    throw toBackendError(error, options.connectionString);
  } finally {
    await db.destroy();
    if (options.pool) stopGuardingPool();
    else await pool.end();
  }
}
