/**
 * Applies the numbered SQL files in `migrations/` (migration-files.ts) with Kysely's Migrator. The same provider backs
 * `kysely.config.ts`, so `npx kysely migrate:latest` and {@link migrate} run identical SQL.
 */
import { Kysely, Migrator, PostgresDialect, sql, type Migration, type MigrationProvider, type MigratorProps } from 'kysely';
import type pg from 'pg';
import { z } from 'zod';
import { parseOptions } from '../contract/options.js';
import { toBackendError } from './backend-error.js';
import { MIGRATION_LOCK_TABLE, MIGRATION_TABLE, migrationNames, migrationSql } from './migration-files.js';
import { connectionFields, requiringConnection } from './connection-options.js';
import { createPool, dialectPool, guardPool } from './pool.js';
import { DEFAULT_SCHEMA } from './schema-name.js';
import { readSchemaState, schemaMismatchError } from './schema-version.js';

class SqlFileMigrationProvider implements MigrationProvider {
  constructor(private readonly schema: string) {}

  async getMigrations(): Promise<Record<string, Migration>> {
    const migrations: Record<string, Migration> = {};
    for (const name of await migrationNames()) {
      const source = await migrationSql(name, this.schema);
      migrations[name] = {
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

const migrateOptionsSchema = requiringConnection(z.strictObject(connectionFields));

/**
 * Applies every pending migration to `schema`. Safe to run from several processes at once: Kysely
 * takes an advisory lock, and the losers find nothing left to apply. Returns the migrations this
 * call applied ([] when none were pending). A schema migrated by a newer version of the package is
 * left alone, with an error that says so.
 */
export async function migrate(options: MigrateOptions): Promise<{ applied: string[] }> {
  const parsed = parseOptions(migrateOptionsSchema, options);
  const schema = parsed.schema ?? DEFAULT_SCHEMA;
  const pool = parsed.pool ?? createPool(parsed.connectionString, 1);
  const stopGuardingPool = parsed.pool ? guardPool(parsed.pool) : () => {};
  const db = new Kysely<unknown>({
    dialect: new PostgresDialect({ pool: dialectPool(pool, { preparedStatements: false }) }),
  });
  try {
    const { results, error } = await new Migrator({ db, ...migratorOptions(schema) }).migrateToLatest();
    if (error) throw error;
    return { applied: (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName) };
  } catch (error) {
    const failure = toBackendError(error, parsed.connectionString);
    const state = await readSchemaState(db, schema).catch(() => null);
    throw state?.state === 'newer' ? schemaMismatchError(schema, state, failure) : failure;
  } finally {
    await db.destroy();
    if (parsed.pool) stopGuardingPool();
    else await pool.end();
  }
}
