/**
 * The `mcp-task-store` command line: global options, help, and exit codes, around the commands
 * in ./commands/. Every failure is one line on stderr, without a stack or a password: exit code 2
 * when the command line is wrong, 1 when the command could not do its job.
 */
import { readFileSync } from 'node:fs';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { TaskStoreError } from '../contract/errors.js';
import { toBackendError } from '../postgres/backend-error.js';
import { DEFAULT_SCHEMA, validateSchemaName } from '../postgres/schema-name.js';
import { BIN, CliError, type CliIo, type Command, type OptionSpec, type OptionValues } from './command.js';
import { dashboardCommand } from './commands/dashboard.js';
import { migrateCommand } from './commands/migrate.js';
import { reapCommand } from './commands/reap.js';
import { showCommand } from './commands/show.js';
import { statusCommand } from './commands/status.js';
import { tasksCommand } from './commands/tasks.js';
import { validateCommand } from './commands/validate.js';
import { watchCommand } from './commands/watch.js';
import { describeDatabase } from './describe-database.js';

const COMMANDS: Command[] = [migrateCommand, validateCommand, statusCommand, tasksCommand, showCommand, reapCommand, watchCommand, dashboardCommand];

const GLOBAL_OPTIONS: Record<string, OptionSpec & { short?: string }> = {
  'database-url': { type: 'string', value: '<url>', help: 'the database (default: $DATABASE_URL)' },
  schema: { type: 'string', value: '<name>', help: `the schema holding the task tables (default: $MCP_TASKS_SCHEMA, else ${DEFAULT_SCHEMA})` },
  json: { type: 'boolean', help: 'print one JSON document (watch: one per line) instead of text' },
  help: { type: 'boolean', short: 'h', help: 'show help (for a command: mcp-task-store <command> --help)' },
  version: { type: 'boolean', short: 'v', help: 'show the package version' },
};

export const USAGE = `Usage: ${BIN} <command> [options]

Operates the PostgreSQL task store of mcp-task-store-postgres: migrations, what the store holds,
one task's story, the reaper, live changes.

Commands:
${COMMANDS.map((command) => `  ${command.name.padEnd(9)} ${command.summary}`).join('\n')}

Options (every command):
${optionLines(GLOBAL_OPTIONS)}

Exit codes: 0 done, 1 failed (database error, unknown task, unmigrated schema, validate found differences),
2 usage error.

Example:
  DATABASE_URL=postgres://user:password@host:5432/app npx ${BIN} status --schema mcp_tasks`;

export function commandUsage(command: Command): string {
  const synopsis = [BIN, command.name, command.synopsis, '[options]'].filter(Boolean).join(' ');
  const own = Object.keys(command.options).length > 0 ? `Options:\n${optionLines(command.options)}\n\n` : '';
  return `Usage: ${synopsis}\n\n${command.description}\n\n${own}Options of every command:\n${optionLines(GLOBAL_OPTIONS)}`;
}

/** Runs the command line `args` (without node and the script); resolves to the exit code. */
export async function runCli(args: string[], env: NodeJS.ProcessEnv, io: CliIo): Promise<number> {
  const name = commandName(args);
  const command = COMMANDS.find((candidate) => candidate.name === name);
  try {
    if (name !== undefined && !command) throw new CliError('usage', `unknown command ${name}`);
    const { values, positionals } = parse(args, command);
    if (values.help) {
      io.out(command ? commandUsage(command) : USAGE);
      return 0;
    }
    if (values.version) {
      io.out(packageVersion());
      return 0;
    }
    if (!command) throw new CliError('usage', 'no command given');
    const commandArgs = positionals.slice(1);
    const expected = command.positionals ?? [];
    if (commandArgs.length < expected.length) throw new CliError('usage', `missing <${expected[commandArgs.length]}>`);
    if (commandArgs.length > expected.length) throw new CliError('usage', `unexpected argument ${commandArgs[expected.length]}`);

    const connectionString = string(values['database-url']) ?? env.DATABASE_URL;
    if (!connectionString) throw new CliError('usage', 'no database: pass --database-url or set DATABASE_URL');
    const schema = schemaName(string(values.schema) ?? env.MCP_TASKS_SCHEMA);
    const schemaSource = values.schema !== undefined ? '' : env.MCP_TASKS_SCHEMA ? ' (from MCP_TASKS_SCHEMA)' : ' (the default; choose another with --schema)';
    const database = describeDatabase(connectionString);
    const { 'database-url': _url, schema: _schema, json, help: _help, version: _version, ...options } = values;
    await command.run({
      connectionString,
      schema,
      database,
      header: `database ${database}, schema ${schema}${schemaSource}`,
      json: json === true,
      io,
      options,
      args: commandArgs,
    });
    return 0;
  } catch (error) {
    if (error instanceof CliError && error.kind === 'usage') {
      io.err(`${BIN}: ${error.message} (see ${BIN}${command ? ` ${command.name}` : ''} --help)`);
      return 2;
    }
    const message = error instanceof CliError || error instanceof TaskStoreError ? error.message : toBackendError(error).message;
    io.err(`${BIN}: ${oneLine(message)}`);
    return 1;
  }
}

/** The first argument that is neither an option nor the value of a global option. */
function commandName(args: string[]): string | undefined {
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '--') return args[i + 1];
    if (!arg.startsWith('-')) return arg;
    if (GLOBAL_OPTIONS[arg.slice(2)]?.type === 'string') i++;
  }
  return undefined;
}

/** No option is `multiple`, so every value is a string or a boolean. */
function parse(args: string[], command: Command | undefined): { values: OptionValues; positionals: string[] } {
  const options: ParseArgsConfig['options'] = {};
  for (const [name, spec] of Object.entries({ ...GLOBAL_OPTIONS, ...command?.options })) {
    options[name] = { type: spec.type, ...('short' in spec && spec.short ? { short: spec.short } : {}) };
  }
  try {
    const { values, positionals } = parseArgs({ args, options, allowPositionals: true, strict: true });
    return { values: values as OptionValues, positionals };
  } catch (error) {
    // Node's own messages, shortened to what an operator needs.
    const message = (error as Error).message;
    const unknown = /^Unknown option '([^']+)'/.exec(message);
    const missing = /^Option '(\S+)(?: <value>)?' argument missing/.exec(message);
    throw new CliError('usage', unknown ? `unknown option ${unknown[1]}` : missing ? `${missing[1]} needs a value` : message.split('\n')[0]!);
  }
}

function schemaName(schema: string | undefined): string {
  try {
    return validateSchemaName(schema ?? DEFAULT_SCHEMA);
  } catch (error) {
    throw new CliError('usage', (error as Error).message);
  }
}

function optionLines(options: Record<string, OptionSpec & { short?: string }>): string {
  const names = Object.entries(options).map(([name, spec]) => [
    `${spec.short ? `-${spec.short}, ` : ''}--${name}${spec.value ? ` ${spec.value}` : ''}`,
    spec.help,
  ]);
  const width = Math.max(...names.map(([name]) => name!.length));
  return names.map(([name, help]) => `  ${name!.padEnd(width)}  ${help}`).join('\n');
}

function string(value: string | boolean | undefined): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

/** A driver message can span lines (a server's DETAIL); the CLI's error is one. */
function oneLine(message: string): string {
  return message.replace(/\s*\n\s*/g, ' ');
}

function packageVersion(): string {
  const manifest = new URL('../../package.json', import.meta.url);
  return (JSON.parse(readFileSync(manifest, 'utf8')) as { version: string }).version;
}
