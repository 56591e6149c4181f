/**
 * Whether a schema holds the tables this version of the package expects, told in errors that say
 * what to do. Checked only on the error path: when a statement fails in a way a schema that is
 * missing, behind or ahead of this package explains, one look at the migration table says which.
 */
import { sql, type Kysely } from 'kysely';
import { TaskStoreError } from '../contract/errors.js';
import { MIGRATION_TABLE, migrationNames } from './migration-files.js';

export type SchemaState =
  | { state: 'current' }
  /** No migration table: `migrate()` never ran on this schema. */
  | { state: 'unmigrated' }
  | { state: 'behind'; pending: string[] }
  | { state: 'newer'; unknown: string[] };

/**
 * SQLSTATEs a schema mismatch produces: undefined table, schema, column, function or object; and
 * the NOT NULL or CHECK violations of a newer schema's constraints.
 */
const MISMATCH_CODES = new Set(['42P01', '3F000', '42703', '42883', '42704', '23502', '23514']);

export function mayBeSchemaMismatch(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && MISMATCH_CODES.has(code);
}

/** One look at the schema's migration table; at most two short queries. */
export async function readSchemaState(db: Kysely<any>, schema: string): Promise<SchemaState> {
  const known = await migrationNames();
  const table = `${schema}.${MIGRATION_TABLE}`;
  const { rows } = await sql<{ exists: boolean }>`SELECT to_regclass(${table}) IS NOT NULL AS exists`.execute(db);
  if (!rows[0]!.exists) return { state: 'unmigrated' };
  const applied = (await sql<{ name: string }>`SELECT name FROM ${sql.table(table)}`.execute(db)).rows.map((row) => row.name);
  const unknown = applied.filter((name) => !known.includes(name)).sort();
  if (unknown.length > 0) return { state: 'newer', unknown };
  const pending = known.filter((name) => !applied.includes(name));
  return pending.length > 0 ? { state: 'behind', pending } : { state: 'current' };
}

/** What to do about a schema that is not `current`, as a `backend` error. */
export function schemaMismatchError(schema: string, state: Exclude<SchemaState, { state: 'current' }>, cause: TaskStoreError): TaskStoreError {
  const migrateCall = `migrate({ schema: '${schema}' })`;
  const advice = {
    unmigrated: () => `schema "${schema}" was never migrated: run ${migrateCall} before using the store`,
    behind: (pending: string[]) =>
      `schema "${schema}" is behind this version of mcp-task-store-postgres (not applied: ${pending.join(', ')}): run ${migrateCall}`,
    newer: (unknown: string[]) =>
      `schema "${schema}" was migrated by a newer version of mcp-task-store-postgres (${unknown.join(', ')} unknown to this one): upgrade this instance`,
  };
  const message =
    state.state === 'unmigrated' ? advice.unmigrated() : state.state === 'behind' ? advice.behind(state.pending) : advice.newer(state.unknown);
  return new TaskStoreError('backend', `${message} (${cause.message})`, { cause: cause.cause });
}
