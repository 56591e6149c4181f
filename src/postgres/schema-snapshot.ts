/**
 * What a schema holds, read from the catalogs and written as text (snapshot-text.ts) with its name
 * replaced by `{{schema}}`: domains, tables (columns, storage options, constraints, triggers),
 * views (their columns and the columns they read), indexes and functions, in the words PostgreSQL's own pg_get_*def functions use. The
 * package ships the snapshot its migrations produce (migrations/schema.snapshot, written by
 * `npm run schema:dump`), so a live schema can be checked against it: {@link validateSchema}.
 *
 * Only structure is read, never rows (Kysely's bookkeeping tables appear as tables, not as the
 * migrations they list), and nothing that varies between deployments or PostgreSQL versions:
 * owners, privileges, statistics, and PostgreSQL 18's NOT NULL constraints (nullability is read
 * from the columns, where every version keeps it).
 */
import { readFile } from 'node:fs/promises';
import type pg from 'pg';
import { SCHEMA_SNAPSHOT_FILE } from './migration-files.js';
import { notificationChannel, quoteLiteral } from './schema-name.js';
import { compareSnapshots, parseSnapshot, renderSnapshot, type SnapshotEntry } from './snapshot-text.js';

const HEADER = [
  'The schema the migrations in this directory create, as `mcp-task-store validate`',
  'expects to find it; {{schema}} stands for the schema name. Written by `npm run schema:dump`.',
];

/** The snapshot of `schema` as it is now; a schema that does not exist gives an empty one. */
export async function readSchemaSnapshot(pool: pg.Pool, schema: string): Promise<string> {
  return anonymise(renderSnapshot(HEADER, await readEntries(pool, schema)), schema);
}

/** The snapshot this version of the package expects, as it ships in migrations/. */
export function expectedSchemaSnapshot(): Promise<string> {
  return readFile(SCHEMA_SNAPSHOT_FILE, 'utf8');
}

/** What differs between two snapshots' texts, as {@link validateSchema} reports it. */
export function compareSchemaSnapshots(actual: string, expected: string): string[] {
  return compareSnapshots(parseSnapshot(actual), parseSnapshot(expected));
}

/**
 * Everything about `schema` that differs from what this version's migrations create, one readable
 * line per difference, grouped by object ("index tasks_owner_created_idx: missing", "table tasks,
 * column owner: type bigint, expected text"); [] when the schema is exactly as expected.
 */
export async function validateSchema(pool: pg.Pool, schema: string): Promise<string[]> {
  const { rowCount } = await pool.query('SELECT FROM pg_namespace WHERE nspname = $1', [schema]);
  if (rowCount === 0) return [`schema ${schema}: missing`];
  return compareSchemaSnapshots(await readSchemaSnapshot(pool, schema), await expectedSchemaSnapshot());
}

/**
 * The schema's name, qualifying an object or in the NOTIFY channel the migrations fill in, as the
 * placeholders the migrations use. A bare name is replaced only before a dot and after no name
 * character, so a table that happens to share the schema's name keeps it.
 */
function anonymise(text: string, schema: string): string {
  const qualified = new RegExp(`(?<![\\w$."])${schema.replaceAll('$', '\\$')}\\.`, 'g');
  return unquoteNames(text)
    .replaceAll(quoteLiteral(notificationChannel(schema)), '{{channel}}')
    .replace(qualified, '{{schema}}.');
}

/** A quoted plain lowercase name, or a string literal (left as it is), on one line. */
const QUOTED_NAME_OR_LITERAL = /'(?:[^']|'')*'|"([a-z_][a-z0-9_$]*)"/g;

/**
 * Plain lowercase names without their quotes: which of them PostgreSQL quotes depends on its
 * version's keywords (16 made json_object one), and the quotes change nothing about the name.
 * Line by line, so that a stray apostrophe in a function's comment confuses one line at most.
 */
function unquoteNames(text: string): string {
  return text
    .split('\n')
    .map((line) => line.replace(QUOTED_NAME_OR_LITERAL, (match, name: string | undefined) => name ?? match))
    .join('\n');
}

// -- Reading the catalogs -------------------------------------------------------------------------

const entry = (label: string, value?: string, children: SnapshotEntry[] = []): SnapshotEntry => ({ label, value, children });

/** By label, in code-point order: the same on every server, whatever its collation. */
const sorted = (entries: SnapshotEntry[]) => entries.sort((a, b) => (a.label < b.label ? -1 : a.label > b.label ? 1 : 0));

/** pg_get_*def text: trailing blanks dropped, which no definition depends on and editors strip. */
const definition = (text: string) => text.trimEnd().split('\n').map((line) => line.trimEnd()).join('\n');

/** An object that belongs to an extension is the extension's, not the schema's. */
const NOT_FROM_EXTENSION = (catalog: string, alias: string) =>
  `NOT EXISTS (SELECT FROM pg_depend e WHERE e.classid = '${catalog}'::regclass AND e.objid = ${alias}.oid AND e.deptype = 'e')`;

const QUERIES = {
  domains: `
    SELECT t.typname AS name, format_type(t.typbasetype, t.typtypmod) AS type, t.typnotnull AS not_null,
           t.typdefault AS default,
           CASE WHEN t.typcollation <> base.typcollation THEN t.typcollation::regcollation::text END AS collation
      FROM pg_type t JOIN pg_type base ON base.oid = t.typbasetype
     WHERE t.typnamespace = $1 AND t.typtype = 'd' AND ${NOT_FROM_EXTENSION('pg_type', 't')}`,
  relations: `
    SELECT c.relname AS name, c.relkind AS kind, c.relpersistence AS persistence, c.reloptions AS options
      FROM pg_class c
     WHERE c.relnamespace = $1 AND c.relkind IN ('r', 'p', 'v', 'm') AND ${NOT_FROM_EXTENSION('pg_class', 'c')}`,
  columns: `
    SELECT c.relname AS relation, a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type,
           a.attnotnull AS not_null, pg_get_expr(d.adbin, d.adrelid) AS default, a.attidentity AS identity,
           a.attgenerated AS generated,
           CASE WHEN a.attcollation <> t.typcollation THEN a.attcollation::regcollation::text END AS collation
      FROM pg_attribute a
      JOIN pg_class c ON c.oid = a.attrelid
      JOIN pg_type t ON t.oid = a.atttypid
      LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
     WHERE c.relnamespace = $1 AND c.relkind IN ('r', 'p', 'v', 'm') AND a.attnum > 0 AND NOT a.attisdropped
     ORDER BY a.attnum`,
  // A view is described by its columns and by the columns it reads: pg_get_viewdef's text changes
  // between versions (16 stopped qualifying columns of a query's only table).
  viewReads: `
    SELECT v.relname AS view,
           array_agg(DISTINCT ARRAY[ref.relname::text, COALESCE(a.attname::text, '')]) AS reads
      FROM pg_rewrite r
      JOIN pg_class v ON v.oid = r.ev_class
      JOIN pg_depend d ON d.classid = 'pg_rewrite'::regclass AND d.objid = r.oid AND d.refclassid = 'pg_class'::regclass
      JOIN pg_class ref ON ref.oid = d.refobjid AND ref.oid <> v.oid
      LEFT JOIN pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid AND d.refobjsubid > 0
     WHERE v.relnamespace = $1 AND v.relkind IN ('v', 'm')
     GROUP BY v.relname`,
  // contype 'n': PostgreSQL 18's NOT NULL constraints, which 15 does not have.
  constraints: `
    SELECT CASE WHEN con.contypid <> 0 THEN 'domain ' || t.typname ELSE 'relation ' || c.relname END AS owner, con.conname AS name, pg_get_constraintdef(con.oid) AS definition
      FROM pg_constraint con
      LEFT JOIN pg_class c ON c.oid = con.conrelid
      LEFT JOIN pg_type t ON t.oid = con.contypid
     WHERE con.connamespace = $1 AND con.contype <> 'n'`,
  indexes: `
    SELECT c.relname AS name, pg_get_indexdef(c.oid) AS definition
      FROM pg_class c
     WHERE c.relnamespace = $1 AND c.relkind IN ('i', 'I') AND ${NOT_FROM_EXTENSION('pg_class', 'c')}`,
  triggers: `
    SELECT c.relname AS relation, t.tgname AS name, pg_get_triggerdef(t.oid) AS definition, t.tgenabled AS enabled
      FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
     WHERE c.relnamespace = $1 AND NOT t.tgisinternal`,
  functions: `
    SELECT p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ')' AS name,
           pg_get_functiondef(p.oid) AS definition
      FROM pg_proc p
     WHERE p.pronamespace = $1 AND p.prokind <> 'a' AND ${NOT_FROM_EXTENSION('pg_proc', 'p')}`,
};

type Query = keyof typeof QUERIES;
type Row = Record<string, any>;

const RELATION_KINDS: Record<string, string> = { r: 'table', p: 'partitioned table', v: 'view', m: 'materialized view' };
const IDENTITY: Record<string, string> = { a: 'always', d: 'by default' };
const GENERATED: Record<string, string> = { s: 'stored', v: 'virtual' };
/** tgenabled other than 'O' (fires in origin and local sessions, the default). */
const TRIGGER_STATES: Record<string, string> = { D: 'disabled', R: 'fires on replicas only', A: 'fires always' };

async function readEntries(pool: pg.Pool, schema: string): Promise<SnapshotEntry[]> {
  const client = await pool.connect();
  let broken = false;
  try {
    // One snapshot of the catalogs; pg_catalog alone on the search path, so every name outside
    // it comes schema-qualified, whatever the caller's search path holds.
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    await client.query('SET LOCAL search_path = pg_catalog');
    const namespace = (await client.query('SELECT oid FROM pg_namespace WHERE nspname = $1', [schema])).rows[0]?.oid;
    const rows = {} as Record<Query, Row[]>;
    for (const name of Object.keys(QUERIES) as Query[]) {
      rows[name] = namespace === undefined ? [] : (await client.query(QUERIES[name], [namespace])).rows;
    }
    await client.query('COMMIT');
    return toEntries(rows);
  } catch (error) {
    broken = true;
    throw error;
  } finally {
    // A connection whose transaction failed is dropped rather than handed back mid-transaction.
    client.release(broken);
  }
}

function toEntries(rows: Record<Query, Row[]>): SnapshotEntry[] {
  const byOwner = (list: Row[], key: string) => {
    const groups = new Map<string, Row[]>();
    for (const row of list) groups.set(row[key], [...(groups.get(row[key]) ?? []), row]);
    return (name: string) => groups.get(name) ?? [];
  };
  const columnsOf = byOwner(rows.columns, 'relation');
  const constraintsOf = byOwner(rows.constraints, 'owner');
  const triggersOf = byOwner(rows.triggers, 'relation');
  const readsOf = byOwner(rows.viewReads, 'view');
  const constraints = (owner: string) =>
    sorted(constraintsOf(owner).map((row) => entry(`constraint ${row.name}`, definition(row.definition))));

  const domains = rows.domains.map((row) =>
    entry(`domain ${row.name}`, undefined, [
      entry('type', row.type),
      ...(row.not_null ? [entry('not null')] : []),
      ...(row.default !== null ? [entry('default', row.default)] : []),
      ...(row.collation !== null ? [entry('collation', row.collation)] : []),
      ...constraints(`domain ${row.name}`),
    ]),
  );
  const relations = rows.relations.map((row) => {
    const options: string[] | null = row.options;
    return entry(`${RELATION_KINDS[row.kind]} ${row.name}`, undefined, [
      ...(row.persistence === 'u' ? [entry('unlogged')] : []),
      ...(options ? [entry('options', [...options].sort().join(', '))] : []),
      ...readsOf(row.name).map((view) => entry('reads', viewReads(view.reads))),
      ...columnsOf(row.name).map(column),
      ...constraints(`relation ${row.name}`),
      ...sorted(triggersOf(row.name).map(trigger)),
    ]);
  });
  const indexes = rows.indexes.map((row) => entry(`index ${row.name}`, definition(row.definition)));
  const functions = rows.functions.map((row) => entry(`function ${row.name}`, definition(row.definition)));
  return [...sorted(domains), ...sorted(relations), ...sorted(indexes), ...sorted(functions)];
}

/** `[relation, column]` pairs as "relation (column, …)", sorted; written without a dot, which would read as a schema. */
function viewReads(pairs: [string, string][]): string {
  const columns = new Map<string, string[]>();
  for (const [relation, name] of pairs) columns.set(relation, [...(columns.get(relation) ?? []), ...(name ? [name] : [])]);
  return [...columns.keys()]
    .sort()
    .map((relation) => `${relation} (${columns.get(relation)!.sort().join(', ')})`)
    .join(', ');
}

function column(row: Row): SnapshotEntry {
  const generated = GENERATED[row.generated];
  return entry(`column ${row.name}`, undefined, [
    entry('type', row.type),
    ...(row.not_null ? [entry('not null')] : []),
    ...(row.collation !== null ? [entry('collation', row.collation)] : []),
    ...(IDENTITY[row.identity] ? [entry('identity', `generated ${IDENTITY[row.identity]}`)] : []),
    ...(row.default !== null ? [generated ? entry('generated', `(${row.default}) ${generated}`) : entry('default', row.default)] : []),
  ]);
}

function trigger(row: Row): SnapshotEntry {
  const state = TRIGGER_STATES[row.enabled];
  return entry(`trigger ${row.name}`, definition(row.definition), state ? [entry(state)] : []);
}
