/**
 * What every command of the `mcp-task-store` CLI is: a name, its help, its own options, and a
 * `run` that gets the parsed command line and the connection settings. cli.ts parses, prints help
 * and turns failures into exit codes; the commands live in ./commands/, one module each.
 */
export const BIN = 'mcp-task-store';

/** Where the command writes and how it learns to stop; the process's own unless a test says otherwise. */
export interface CliIo {
  /** One line (or several joined by \n) to stdout. */
  out(text: string): void;
  /** One line to stderr. */
  err(text: string): void;
  /** Whether stdout is a terminal: `watch` redraws its view there instead of printing a log. */
  readonly interactive: boolean;
  /** Calls `stop` on SIGINT or SIGTERM until the returned function is called. Asked for by `watch` only. */
  onStop(stop: () => void): () => void;
}

export interface OptionSpec {
  type: 'string' | 'boolean';
  /** How the help names the value, e.g. '<duration>'; string options only. */
  value?: string;
  help: string;
}

export type OptionValues = Record<string, string | boolean | undefined>;

export interface CommandContext {
  readonly connectionString: string;
  readonly schema: string;
  /** "database postgres://app@host/db, schema mcp_tasks (the default; …)": no password in it. */
  readonly header: string;
  /** The database without its password, as JSON documents name it. */
  readonly database: string;
  readonly json: boolean;
  readonly io: CliIo;
  /** The command's own options (the global ones are in the fields above). */
  readonly options: OptionValues;
  /** The command's positional arguments, as many as it declares. */
  readonly args: string[];
}

export interface Command {
  name: string;
  /** One line for the overall help. */
  summary: string;
  /** The rest of the command line after the name, e.g. '<taskId>'. */
  synopsis?: string;
  /** Paragraphs for `mcp-task-store <name> --help`, after the synopsis. */
  description: string;
  options: Record<string, OptionSpec>;
  /** The names of the positional arguments, all required. */
  positionals?: string[];
  run(context: CommandContext): Promise<void>;
}

/**
 * A failure the CLI reports in one line: `usage` (exit code 2: the command line is wrong) or
 * `failure` (exit code 1: the command could not do its job).
 */
export class CliError extends Error {
  constructor(
    readonly kind: 'usage' | 'failure',
    message: string,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

/** The header line in human mode; JSON documents carry the same facts as fields instead. */
export function announce(context: CommandContext): void {
  if (!context.json) context.io.out(context.header);
}

/** The command's one JSON document on stdout: `database` and `schema`, then the command's fields. */
export function printJson(context: CommandContext, fields: Record<string, unknown>): void {
  context.io.out(JSON.stringify({ database: context.database, schema: context.schema, ...fields }, null, 2));
}
