/** `mcp-task-store migrate`: apply the pending migrations, list them (--dry-run), or print their SQL (--print). */
import { migrate } from '../../postgres/migrate.js';
import { migrationScript } from '../../postgres/migration-script.js';
import { migrationNames } from '../../postgres/migration-files.js';
import { readSchemaState } from '../../postgres/schema-version.js';
import { announce, BIN, CliError, printJson, type Command, type CommandContext } from '../command.js';
import { withDatabase, type CliDatabase } from '../database.js';

export const migrateCommand: Command = {
  name: 'migrate',
  summary: 'apply the pending migrations (or list them, or print their SQL)',
  description: `Applies every migration this version of the package has and the schema lacks, creating the
schema on first use. Safe beside other migrators: they take turns on an advisory lock.

--print writes the pending migrations as one SQL script for a DBA to review and run
(psql -f): one transaction that takes the same lock and records each migration in
<schema>.kysely_migration, so the store and a later migrate see them applied.`,
  options: {
    'dry-run': { type: 'boolean', help: 'list what would be applied; change nothing' },
    print: { type: 'boolean', help: 'print the SQL that would be applied, the schema filled in; change nothing' },
  },
  async run(context) {
    if (context.options['dry-run'] && context.options.print) throw new CliError('usage', '--dry-run and --print: choose one');
    if (!context.options.print) announce(context);
    await withDatabase(context, 1, async (database) => {
      if (context.options.print) return printScript(context, await pendingMigrations(database));
      if (context.options['dry-run']) return report(context, { dryRun: true, applied: [], pending: (await pendingMigrations(database)).names });
      const { applied } = await migrate({ pool: database.pool, schema: context.schema });
      report(context, { dryRun: false, applied, pending: [] });
    });
  },
};

interface Pending {
  names: string[];
  unmigrated: boolean;
}

/** What `migrate` would apply; a schema migrated by a newer version is refused, as `migrate` refuses it. */
async function pendingMigrations(database: CliDatabase): Promise<Pending> {
  const state = await readSchemaState(database.db, database.schema);
  if (state.state === 'newer') {
    throw new CliError('failure', `schema "${database.schema}" was migrated by a newer version of the package (${state.unknown.join(', ')} unknown to this one): use that version`);
  }
  if (state.state === 'unmigrated') return { names: await migrationNames(), unmigrated: true };
  return { names: state.state === 'behind' ? state.pending : [], unmigrated: false };
}

function report(context: CommandContext, result: { dryRun: boolean; applied: string[]; pending: string[] }): void {
  if (context.json) return printJson(context, result);
  const names = result.dryRun ? result.pending : result.applied;
  if (names.length === 0) context.io.out('nothing to apply: every migration is applied');
  for (const name of names) context.io.out(`${result.dryRun ? 'would apply' : 'applied'} ${name}`);
}

async function printScript(context: CommandContext, { names, unmigrated }: Pending): Promise<void> {
  const header = [`${BIN} migrate --print: ${context.header}`];
  const script =
    names.length === 0
      ? null
      : await migrationScript({ schema: context.schema, names, createMigrationTables: unmigrated, header: [...header, `applies ${names.join(', ')}`] });
  if (context.json) return printJson(context, { pending: names, sql: script });
  context.io.out(script ?? [...header, 'nothing to apply: every migration is applied'].map((line) => `-- ${line}`).join('\n'));
}
