/**
 * The numbered SQL files in `migrations/`, as both the migrator and the schema check see them.
 * Each `NNNN_name.sql` file is one migration, named after the file, applied in name order.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { notificationChannel, quoteIdentifier, quoteLiteral } from './schema-name.js';

export const MIGRATIONS_DIRECTORY = fileURLToPath(new URL('../../migrations/', import.meta.url));

/**
 * The schema the migrations create, as schema-snapshot.ts writes it: shipped beside them, and no
 * migration, since only `NNNN_name.sql` files are.
 */
export const SCHEMA_SNAPSHOT_FILE = join(MIGRATIONS_DIRECTORY, 'schema.snapshot');

/** Kysely's bookkeeping tables live in the store's own schema, so two schemas never interfere. */
export const MIGRATION_TABLE = 'kysely_migration';
export const MIGRATION_LOCK_TABLE = 'kysely_migration_lock';

const MIGRATION_FILE = /^(\d{4}_[a-z0-9_]+)\.sql$/;

let names: Promise<string[]> | undefined;

/** The migrations this version of the package ships, in order. */
export function migrationNames(): Promise<string[]> {
  names ??= readdir(MIGRATIONS_DIRECTORY).then((files) =>
    files.flatMap((file) => MIGRATION_FILE.exec(file)?.[1] ?? []).sort(),
  );
  return names;
}

/** The SQL of one migration for `schema`, its two placeholders filled in. */
export async function migrationSql(name: string, schema: string): Promise<string> {
  return renderMigration(await readFile(join(MIGRATIONS_DIRECTORY, `${name}.sql`), 'utf8'), schema);
}

export function renderMigration(source: string, schema: string): string {
  return source
    .replaceAll('{{schema}}', quoteIdentifier(schema))
    .replaceAll('{{channel}}', quoteLiteral(notificationChannel(schema)));
}
