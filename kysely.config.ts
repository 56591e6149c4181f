/**
 * kysely-ctl, for contributors, runs the same SQL migrations as `migrate()` and the package's
 * `mcp-task-store` command:
 *
 *   DATABASE_URL=postgres://… npx kysely migrate:latest
 *   DATABASE_URL=postgres://… MCP_TASKS_SCHEMA=other_schema npx kysely migrate:list
 */
import { PostgresDialect } from 'kysely';
import { defineConfig } from 'kysely-ctl';
import pg from 'pg';
import { describeDatabase } from './src/cli/describe-database.js';
import { migratorOptions } from './src/postgres/migrate.js';
import { DEFAULT_SCHEMA, validateSchemaName } from './src/postgres/schema-name.js';

const connectionString = process.env.DATABASE_URL;
if (!connectionString) throw new Error('kysely.config.ts: set DATABASE_URL to the database to migrate');
const schema = validateSchemaName(process.env.MCP_TASKS_SCHEMA ?? DEFAULT_SCHEMA);
const schemaSource = process.env.MCP_TASKS_SCHEMA ? 'from MCP_TASKS_SCHEMA' : 'the default; set MCP_TASKS_SCHEMA for another';
console.error(`database ${describeDatabase(connectionString)}, schema ${schema} (${schemaSource})`);

export default defineConfig({
  dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString, max: 1 }) }),
  migrations: migratorOptions(schema),
});
