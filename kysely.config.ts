/**
 * kysely-ctl runs the same SQL migrations as `migrate()`:
 *
 *   DATABASE_URL=postgres://… npx kysely migrate:latest
 *   DATABASE_URL=postgres://… MCP_TASKS_SCHEMA=other_schema npx kysely migrate:list
 */
import { PostgresDialect } from 'kysely';
import { defineConfig } from 'kysely-ctl';
import pg from 'pg';
import { migratorOptions } from './src/postgres/migrate.js';
import { DEFAULT_SCHEMA, validateSchemaName } from './src/postgres/schema-name.js';

const schema = validateSchemaName(process.env.MCP_TASKS_SCHEMA ?? DEFAULT_SCHEMA);

export default defineConfig({
  dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 1 }) }),
  migrations: migratorOptions(schema),
});
