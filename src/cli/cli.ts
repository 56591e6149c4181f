/**
 * The `mcp-task-store-postgres` command: applies and lists the package's migrations, wherever the
 * package is installed. It always says which database and schema it works on before it starts.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { Kysely, Migrator, PostgresDialect } from 'kysely';
import { TaskStoreError } from '../contract/errors.js';
import { toBackendError } from '../postgres/backend-error.js';
import { migrate, migratorOptions } from '../postgres/migrate.js';
import { createPool } from '../postgres/pool.js';
import { DEFAULT_SCHEMA, validateSchemaName } from '../postgres/schema-name.js';
import { describeDatabase } from './describe-database.js';

const COMMAND = 'mcp-task-store-postgres';

export const USAGE = `Usage: ${COMMAND} <command> [options]

Commands:
  migrate   apply every pending migration (creates the schema and its tables)
  status    list the migrations, applied or pending

Options:
  --database-url <url>  the database (default: $DATABASE_URL)
  --schema <name>       the schema holding the task tables (default: $MCP_TASKS_SCHEMA, else ${DEFAULT_SCHEMA})
  -h, --help            show this help
  -v, --version         show the package version

Example:
  DATABASE_URL=postgres://user:password@host:5432/app npx ${COMMAND} migrate --schema mcp_tasks`;

/** Where the command writes; the process's stdout and stderr unless a test says otherwise. */
export interface Output {
  out(line: string): void;
  err(line: string): void;
}

const processOutput: Output = {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
};

/** Runs the command line `args` (without node and the script); resolves to the exit code. */
export async function runCli(args: string[], env: NodeJS.ProcessEnv = process.env, output: Output = processOutput): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      allowPositionals: true,
      options: {
        'database-url': { type: 'string' },
        schema: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean', short: 'v' },
      },
    });
  } catch (error) {
    return usageError(output, (error as Error).message);
  }
  const { values, positionals } = parsed;
  if (values.help) {
    output.out(USAGE);
    return 0;
  }
  if (values.version) {
    output.out(packageVersion());
    return 0;
  }
  const [command, ...extra] = positionals;
  if (command !== 'migrate' && command !== 'status') {
    return usageError(output, command === undefined ? 'no command given' : `unknown command ${command}`);
  }
  if (extra.length > 0) return usageError(output, `unexpected argument ${extra[0]}`);

  const connectionString = values['database-url'] ?? env.DATABASE_URL;
  if (!connectionString) return usageError(output, 'no database: pass --database-url or set DATABASE_URL');
  const schemaSource = values.schema !== undefined ? '' : env.MCP_TASKS_SCHEMA ? ' (from MCP_TASKS_SCHEMA)' : ' (the default; choose another with --schema)';
  try {
    const schema = validateSchemaName(values.schema ?? env.MCP_TASKS_SCHEMA ?? DEFAULT_SCHEMA);
    output.out(`database ${describeDatabase(connectionString)}, schema ${schema}${schemaSource}`);
    if (command === 'migrate') await migrateCommand(connectionString, schema, output);
    else await statusCommand(connectionString, schema, output);
    return 0;
  } catch (error) {
    const message = error instanceof TaskStoreError ? error.message : toBackendError(error, connectionString).message;
    output.err(`${COMMAND}: ${message}`);
    return 1;
  }
}

async function migrateCommand(connectionString: string, schema: string, output: Output): Promise<void> {
  const { applied } = await migrate({ connectionString, schema });
  if (applied.length === 0) output.out('nothing to apply: every migration is applied');
  for (const name of applied) output.out(`applied ${name}`);
}

async function statusCommand(connectionString: string, schema: string, output: Output): Promise<void> {
  const db = new Kysely<unknown>({ dialect: new PostgresDialect({ pool: createPool(connectionString, 1) }) });
  try {
    const migrations = await new Migrator({ db, ...migratorOptions(schema) }).getMigrations();
    const width = Math.max(...migrations.map(({ name }) => name.length));
    for (const { name, executedAt } of migrations) {
      output.out(`${name.padEnd(width)}  ${executedAt ? `applied ${executedAt.toISOString()}` : 'pending'}`);
    }
  } finally {
    await db.destroy();
  }
}

function usageError(output: Output, message: string): number {
  output.err(`${COMMAND}: ${message}`);
  output.err(`Run ${COMMAND} --help for usage.`);
  return 2;
}

function packageVersion(): string {
  const manifest = new URL('../../package.json', import.meta.url);
  return (JSON.parse(readFileSync(manifest, 'utf8')) as { version: string }).version;
}
