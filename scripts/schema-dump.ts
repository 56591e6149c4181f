/**
 * `npm run schema:dump`: migrates a scratch schema and writes what it holds to
 * migrations/schema.snapshot, the snapshot `validate` and test/postgres-schema.test.ts compare a
 * schema with. Run it after changing a migration, and commit the snapshot with the migration.
 *
 * The database is DATABASE_URL when set (the scratch schema is dropped afterwards), else a
 * throwaway embedded PostgreSQL.
 */
import { writeFile } from 'node:fs/promises';
import { relative } from 'node:path';
import { migrate } from '../src/postgres/migrate.js';
import { SCHEMA_SNAPSHOT_FILE } from '../src/postgres/migration-files.js';
import { readSchemaSnapshot } from '../src/postgres/schema-snapshot.js';
import { openScriptDatabase } from './database.js';
import { scriptPool } from './support.js';

const database = await openScriptDatabase();
console.log(`database: ${database.description}`);
const pool = scriptPool(database.connectionString, 1);
const schema = `schema_dump_${process.pid}`;
try {
  const { applied } = await migrate({ pool, schema });
  await writeFile(SCHEMA_SNAPSHOT_FILE, await readSchemaSnapshot(pool, schema));
  console.log(`wrote ${relative(process.cwd(), SCHEMA_SNAPSHOT_FILE)}: the schema after ${applied.join(', ')}`);
} finally {
  await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await pool.end();
  await database.stop();
}
