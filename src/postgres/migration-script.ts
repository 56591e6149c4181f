/**
 * The pending migrations as one SQL script, for a DBA who applies them by hand (`mcp-task-store
 * migrate --print`). The script does what `migrate()` does: it takes Kysely's migration lock, so
 * no `migrate()` runs beside it, and records each migration in the schema's migration table, so
 * the store, `status` and a later `migrate()` see it applied. One transaction: all or nothing.
 */
import { MIGRATION_LOCK_TABLE, MIGRATION_TABLE, migrationSql } from './migration-files.js';
import { quoteIdentifier, quoteLiteral } from './schema-name.js';

/** The advisory lock Kysely's PostgreSQL adapter takes around a migration run (kysely 0.28). */
const KYSELY_MIGRATION_LOCK_ID = '3853314791062309107';

export interface MigrationScriptOptions {
  schema: string;
  /** The migrations to apply, in order. */
  names: string[];
  /** Whether the schema still lacks Kysely's tables (never migrated): the script creates them. */
  createMigrationTables: boolean;
  /** Lines for the SQL comment at the top. */
  header: string[];
}

export async function migrationScript(options: MigrationScriptOptions): Promise<string> {
  const schema = quoteIdentifier(options.schema);
  const migrations = `${schema}.${quoteIdentifier(MIGRATION_TABLE)}`;
  const lock = `${schema}.${quoteIdentifier(MIGRATION_LOCK_TABLE)}`;
  const parts = [
    ...options.header.map((line) => `-- ${line}`),
    '',
    'BEGIN;',
    `DO $$ BEGIN PERFORM pg_advisory_xact_lock(${KYSELY_MIGRATION_LOCK_ID}); END $$;`,
  ];
  for (const name of options.names) parts.push('', `-- ${name}`, (await migrationSql(name, options.schema)).trimEnd());
  // After the migrations, which create the schema: Kysely's tables as Kysely creates them.
  parts.push('', '-- Recorded as migrate() records what it applies');
  if (options.createMigrationTables) {
    parts.push(
      `CREATE TABLE IF NOT EXISTS ${migrations} (name varchar(255) NOT NULL PRIMARY KEY, timestamp varchar(255) NOT NULL);`,
      `CREATE TABLE IF NOT EXISTS ${lock} (id varchar(255) NOT NULL PRIMARY KEY, is_locked integer NOT NULL DEFAULT 0);`,
      `INSERT INTO ${lock} (id, is_locked) VALUES ('migration_lock', 0) ON CONFLICT (id) DO NOTHING;`,
    );
  }
  // The ISO timestamp Kysely writes; a migration someone applied meanwhile fails on the primary key.
  const timestamp = `to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
  for (const name of options.names) parts.push(`INSERT INTO ${migrations} (name, timestamp) VALUES (${quoteLiteral(name)}, ${timestamp});`);
  parts.push('COMMIT;');
  return parts.join('\n');
}
