/**
 * The schema guarded: migrating a fresh schema gives exactly migrations/schema.snapshot (so a
 * migration that changes the schema cannot go in without its snapshot), and validateSchema names
 * every way a live schema strays from it, object by object.
 */
import { readdirSync } from 'node:fs';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { migrate } from '../src/postgres/migrate.js';
import { MIGRATIONS_DIRECTORY, migrationNames } from '../src/postgres/migration-files.js';
import { createPool } from '../src/postgres/pool.js';
import {
  compareSchemaSnapshots,
  expectedSchemaSnapshot,
  readSchemaSnapshot,
  validateSchema,
} from '../src/postgres/schema-snapshot.js';
import { parseSnapshot, renderSnapshot } from '../src/postgres/snapshot-text.js';
import { useTestDatabase } from './support/test-database.js';

const database = useTestDatabase();
let pool: pg.Pool;
let schemas = 0;

beforeAll(() => {
  pool = createPool(database.connectionString, 2);
});
afterAll(async () => {
  await pool.end();
});

async function migrated(name = `schema_${++schemas}`): Promise<string> {
  await migrate({ pool, schema: name });
  return name;
}

describe('the committed snapshot', () => {
  test('is exactly what migrating a fresh schema gives', async () => {
    const [actual, expected] = [await readSchemaSnapshot(pool, await migrated()), await expectedSchemaSnapshot()];
    const differences = compareSchemaSnapshots(actual, expected).map((difference) => `  ${difference}`);
    expect(
      actual,
      `a freshly migrated schema differs from migrations/schema.snapshot:\n${differences.join('\n')}\n` +
        'If the change is intended, run `npm run schema:dump` and commit the snapshot with the migration.',
    ).toBe(expected);
  });

  test('names no schema, whatever it is called and whatever the search path holds', async () => {
    const expected = await expectedSchemaSnapshot();
    // A name shared with a table, a reserved word PostgreSQL quotes, and a name with a dollar.
    for (const name of ['tasks', 'user', 'a$b']) expect(await readSchemaSnapshot(pool, await migrated(name))).toBe(expected);

    const schema = await migrated();
    const onSearchPath = new pg.Pool({ connectionString: database.connectionString, max: 1, options: `-c search_path=${schema}` });
    try {
      expect(await readSchemaSnapshot(onSearchPath, schema)).toBe(expected);
    } finally {
      await onSearchPath.end();
    }
  });

  test('holds the structure of the migration tables, not the migrations they list', async () => {
    const expected = await expectedSchemaSnapshot();
    expect(expected).toContain('table kysely_migration\n');
    for (const name of await migrationNames()) expect(expected).not.toContain(name);
  });

  test('sits beside the migrations without being one', async () => {
    const files = readdirSync(MIGRATIONS_DIRECTORY);
    expect(files).toContain('schema.snapshot');
    const sqlFiles = files.filter((file) => file.endsWith('.sql')).map((file) => file.replace(/\.sql$/, ''));
    expect(await migrationNames()).toEqual(sqlFiles.sort());
    expect((await migrate({ pool, schema: `schema_${++schemas}` })).applied).toEqual(sqlFiles);
  });
});

describe('validateSchema', () => {
  test('finds nothing on a freshly migrated schema', async () => {
    expect(await validateSchema(pool, await migrated())).toEqual([]);
  });

  test('names a dropped index, altered columns, changed options, and extra or disabled triggers', async () => {
    const schema = await migrated();
    await pool.query(`
      DROP INDEX ${schema}.tasks_owner_created_idx;
      ALTER TABLE ${schema}.tombstones ALTER COLUMN owner TYPE varchar(200), ALTER COLUMN owner SET NOT NULL;
      ALTER TABLE ${schema}.tombstones ALTER COLUMN tombstoned_at DROP DEFAULT;
      ALTER TABLE ${schema}.tasks SET (fillfactor = 100);
      CREATE TRIGGER audit AFTER INSERT ON ${schema}.tasks FOR EACH ROW EXECUTE FUNCTION ${schema}.announce_task_change();
      ALTER TABLE ${schema}.tasks DISABLE TRIGGER tasks_announce_deletion;
    `);
    expect(await validateSchema(pool, schema)).toEqual([
      'table tasks: options autovacuum_vacuum_scale_factor=0.05, fillfactor=100, expected autovacuum_vacuum_scale_factor=0.05, fillfactor=85',
      'table tasks, trigger tasks_announce_deletion, disabled: unexpected',
      'table tasks, trigger audit: unexpected (CREATE TRIGGER audit AFTER INSERT ON {{schema}}.tasks FOR EACH ROW EXECUTE FUNCTION {{schema}}.announce_task_change())',
      'table tombstones, column owner: type character varying(200), expected text',
      'table tombstones, column owner, not null: unexpected',
      'table tombstones, column tombstoned_at, default: missing',
      'index tasks_owner_created_idx: missing',
    ]);
  });

  test('names a changed function by its first different line, and objects that should not be there', async () => {
    const schema = await migrated();
    const { rows } = await pool.query<{ body: string }>(
      `SELECT pg_get_functiondef(p.oid) AS body FROM pg_proc p WHERE p.pronamespace = $1::regnamespace AND p.proname = 'announce_task_change'`,
      [schema],
    );
    await pool.query(rows[0]!.body.replace(`event := 'ttl';`, `event := 'expiry';`));
    await pool.query(`CREATE VIEW ${schema}.working AS SELECT task_id FROM ${schema}.tasks WHERE status = 'working'`);
    await pool.query(`ALTER TABLE ${schema}.input_requests DROP CONSTRAINT input_requests_check1`);
    expect(await validateSchema(pool, schema)).toEqual([
      'table input_requests, constraint input_requests_check1: missing',
      `function announce_task_change(): line 13 "event := 'expiry';", expected "event := 'ttl';"`,
      'view working: unexpected',
    ]);
  });

  test('says so when the schema does not exist', async () => {
    expect(await validateSchema(pool, 'never_migrated')).toEqual(['schema never_migrated: missing']);
  });
});

describe('the snapshot text', () => {
  test('reads back as it was written, values of several lines included', () => {
    const entries = [
      { label: 'table t', children: [{ label: 'column c', children: [{ label: 'type', value: 'text', children: [] }, { label: 'not null', children: [] }] }] },
      { label: 'index i', value: 'CREATE INDEX i ON {{schema}}.t USING btree (c)', children: [] },
      { label: 'function f()', value: 'CREATE FUNCTION\n\n  indented: here\n| bar', children: [] },
    ];
    const text = renderSnapshot(['a header'], entries);
    expect(parseSnapshot(text)).toEqual(entries);
    expect(renderSnapshot(['a header'], parseSnapshot(text))).toBe(text);
  });

  test('refuses lines that belong to nothing', () => {
    expect(() => parseSnapshot('table t\n    column c')).toThrow('schema snapshot, line 2: indented deeper than the entry above it');
    expect(() => parseSnapshot('table t\n  | stray')).toThrow('schema snapshot, line 2: a value line with no `label:` above it');
  });
});
