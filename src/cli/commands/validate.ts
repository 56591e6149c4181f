/** `mcp-task-store validate`: does the schema hold exactly what this version of the package expects? */
import { validateSchema } from '../../postgres/schema-snapshot.js';
import { announce, CliError, printJson, type Command } from '../command.js';
import { withDatabase } from '../database.js';

export const validateCommand: Command = {
  name: 'validate',
  summary: 'check that the schema matches what this version expects; exit 1 and list what differs',
  description: `Compares the schema's tables, columns, constraints, indexes, triggers, functions, domains and
views with the schema this version's migrations create (migrations/schema.snapshot in the
package), and lists every difference, one line each: something missing, something that
should not be there, or something changed (a column's type, an index's definition, a
function's first different line). Exit code 0 when nothing differs, 1 otherwise; a schema
a migration is pending for differs by what that migration adds.

Rows are never read, nor owners, privileges or objects that belong to extensions.`,
  options: {},
  async run(context) {
    announce(context);
    const differences = await withDatabase(context, 1, (database) => validateSchema(database.pool, context.schema));
    if (context.json) printJson(context, { valid: differences.length === 0, differences });
    else if (differences.length === 0) context.io.out('valid: the schema is what this version expects');
    else for (const difference of differences) context.io.out(difference);
    if (differences.length > 0) {
      const count = differences.length === 1 ? '1 difference' : `${differences.length} differences`;
      throw new CliError('failure', `schema "${context.schema}" differs from what this version expects: ${count}`);
    }
  },
};
