/**
 * Migrations and schemas: `migrate` is safe to run concurrently and idempotent, the kysely-ctl
 * CLI applies the very same migration, a schema name is validated before anything touches the
 * database, and two schemas in one database share nothing: rows, notifications, reaper.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Kysely, Migrator, PostgresDialect } from 'kysely';
import { createPool, dialectPool } from '../src/postgres/pool.js';
import { describe, expect, test } from 'vitest';
import { generateTaskId, migrate, PostgresTaskStore, TaskStoreError, type PostgresTaskStoreOptions } from '../src/index.js';
import { migratorOptions } from '../src/postgres/migrate.js';
import { notificationChannel } from '../src/postgres/schema-name.js';
import { useTestResources } from './support/postgres-stores.js';
import { useTestDatabase } from './support/test-database.js';
import { eventually, stillPending, within } from './support/time.js';

const database = useTestDatabase();
const REPO_ROOT = fileURLToPath(new URL('..', import.meta.url));
/** Tables and views. */
const EXPECTED_TABLES = [
  'execution_leases',
  'input_requests',
  'kysely_migration',
  'kysely_migration_lock',
  'lease_runners',
  'reaper_activity',
  'task_history',
  'task_leases',
  'task_messages',
  'task_rescues',
  'task_sessions',
  'task_summaries',
  'task_transitions',
  'tasks',
  'tombstones',
];
/** Every migration in migrations/, in order. */
const ALL_MIGRATIONS = [
  '0001_tasks',
  '0002_sdk_sessions_and_messages',
  '0003_announce_resumed_tasks',
  '0004_task_history_views',
  '0005_quiet_expiry',
  '0006_dependents_without_cascades',
  '0007_execution_leases',
  '0008_leased_flag',
  '0009_requested_input_flag',
  '0010_lease_indexes_for_hot_heartbeats',
  '0011_runner_on_task_row',
  '0012_leases_listed_by_heartbeat',
];

const resources = useTestResources(database);
const openStores = resources.stores;
let schemas = 0;

// -- Helpers ------------------------------------------------------------------------------------

function schemaName(prefix: string): string {
  return `${prefix}_${++schemas}`;
}

function openStore(options: PostgresTaskStoreOptions): PostgresTaskStore {
  const store = new PostgresTaskStore({ pool: resources.admin, reaper: false, ...options });
  openStores.push(store);
  return store;
}

async function tablesOf(schema: string): Promise<string[]> {
  const { rows } = await resources.admin.query<{ table_name: string }>(
    `SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name`,
    [schema],
  );
  return rows.map((row) => row.table_name);
}

async function schemaNames(): Promise<string[]> {
  const { rows } = await resources.admin.query<{ nspname: string }>('SELECT nspname FROM pg_namespace ORDER BY nspname');
  return rows.map((row) => row.nspname);
}

/**
 * Everything a migration creates in `schema`, with the schema's name replaced by a placeholder so
 * that two schemas can be compared: columns, indexes, constraints, triggers, functions, storage
 * options, and the migrations recorded as applied.
 */
async function describeSchema(schema: string): Promise<Record<string, unknown[]>> {
  const anonymise = (rows: unknown[]) => JSON.parse(JSON.stringify(rows).replaceAll(schema, '<schema>')) as unknown[];
  const query = async (text: string) => anonymise((await resources.admin.query(text, [schema])).rows);
  return {
    columns: await query(
      `SELECT table_name, column_name, ordinal_position, data_type, is_nullable, column_default, is_identity
         FROM information_schema.columns WHERE table_schema = $1 ORDER BY table_name, ordinal_position`,
    ),
    indexes: await query(`SELECT tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = $1 ORDER BY indexname`),
    constraints: await query(
      `SELECT rel.relname, c.conname, c.contype, pg_get_constraintdef(c.oid) AS definition
         FROM pg_constraint c JOIN pg_class rel ON rel.oid = c.conrelid JOIN pg_namespace n ON n.oid = rel.relnamespace
        WHERE n.nspname = $1 ORDER BY rel.relname, c.conname`,
    ),
    triggers: await query(
      `SELECT rel.relname, t.tgname, pg_get_triggerdef(t.oid) AS definition
         FROM pg_trigger t JOIN pg_class rel ON rel.oid = t.tgrelid JOIN pg_namespace n ON n.oid = rel.relnamespace
        WHERE n.nspname = $1 AND NOT t.tgisinternal ORDER BY rel.relname, t.tgname`,
    ),
    functions: await query(
      `SELECT p.proname, pg_get_functiondef(p.oid) AS definition
         FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = $1 ORDER BY p.proname`,
    ),
    relations: await query(
      `SELECT c.relname, c.relkind, c.reloptions
         FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 ORDER BY c.relname`,
    ),
    applied: anonymise(
      (await resources.admin.query(`SELECT name FROM ${schema}.kysely_migration ORDER BY name`)).rows,
    ),
  };
}

const execFileAsync = promisify(execFile);

/** Runs `npx kysely migrate:latest` from the repository root, as an operator would. */
async function migrateWithCli(schema: string | undefined): Promise<{ stdout: string; stderr: string }> {
  const env: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: database.connectionString };
  // Under Vitest the CLI's logger would stay silent (it detects a test environment).
  for (const name of Object.keys(env)) if (/^(VITEST|TEST$|NODE_ENV$)/.test(name)) delete env[name];
  if (schema === undefined) delete env.MCP_TASKS_SCHEMA;
  else env.MCP_TASKS_SCHEMA = schema;
  return execFileAsync('npx', ['kysely', 'migrate:latest', '--no-outdated-check'], {
    cwd: REPO_ROOT,
    env,
    timeout: 60_000,
  });
}

function expectInvalidInput(error: unknown): void {
  expect(error).toBeInstanceOf(TaskStoreError);
  expect((error as TaskStoreError).kind).toBe('invalid_input');
}

// -- migrate() ------------------------------------------------------------------------------------

describe('migrate', () => {
  test('three concurrent runs on a fresh schema: exactly one applies the migration', async () => {
    for (let round = 0; round < 3; round++) {
      const schema = schemaName('concurrent');
      // Each call on its own connection, so they really race for the migration lock.
      const results = await Promise.all(
        [1, 2, 3].map(() => migrate({ connectionString: database.connectionString, schema })),
      );
      const applied = results.map((result) => result.applied).sort((a, b) => b.length - a.length);
      expect(applied).toEqual([ALL_MIGRATIONS, [], []]);
      expect(await tablesOf(schema)).toEqual(EXPECTED_TABLES);
      expect(await migrate({ connectionString: database.connectionString, schema })).toEqual({ applied: [] });
      expect(await migrate({ pool: resources.admin, schema })).toEqual({ applied: [] });
    }
  });

  test('a migrated schema holds exactly the expected tables and a working store', async () => {
    const schema = schemaName('fresh');
    expect(await migrate({ pool: resources.admin, schema })).toEqual({ applied: ALL_MIGRATIONS });
    expect(await tablesOf(schema)).toEqual(EXPECTED_TABLES);
    const store = openStore({ schema });
    const { taskId } = await store.createTask({ toolName: 'probe' });
    expect((await store.getTask(taskId))?.status).toBe('working');
  });

  test('the schema defaults to mcp_tasks, for migrate and for the store', async () => {
    expect(await migrate({ pool: resources.admin })).toEqual({ applied: ALL_MIGRATIONS });
    expect(await tablesOf('mcp_tasks')).toEqual(EXPECTED_TABLES);
    const store = openStore({});
    expect(store.schema).toBe('mcp_tasks');
    const { taskId } = await store.createTask({ toolName: 'probe' });
    const { rows } = await resources.admin.query('SELECT task_id FROM mcp_tasks.tasks');
    expect(rows).toEqual([{ task_id: taskId }]);
    expect(await migrate({ pool: resources.admin })).toEqual({ applied: [] });
  });

  test('a caller-owned pool stays open; a pool migrate() made itself is ended', async () => {
    const pool = createPool(database.connectionString, 2);
    try {
      expect(await migrate({ pool, schema: schemaName('own_pool') })).toEqual({ applied: ALL_MIGRATIONS });
      expect(pool.ended).toBe(false);
      expect((await pool.query<{ one: number }>('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    } finally {
      await pool.end();
    }

    const probe = `migrate_probe_${schemas}`;
    const url = new URL(database.connectionString);
    url.searchParams.set('application_name', probe);
    expect(await migrate({ connectionString: url.toString(), schema: schemaName('url_pool') })).toEqual({
      applied: ALL_MIGRATIONS,
    });
    await eventually('migrate() closing its own connections', async () => {
      const { rows } = await resources.admin.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1',
        [probe],
      );
      return rows[0]!.n === 0;
    });
  });

  test('a 63-byte schema name is accepted and gets a NOTIFY channel of its own', async () => {
    const schema = `long_${schemas++}_`.padEnd(63, 'x');
    expect(Buffer.byteLength(schema)).toBe(63);
    expect(await migrate({ pool: resources.admin, schema })).toEqual({ applied: ALL_MIGRATIONS });
    const store = openStore({ schema });
    const { taskId } = await store.createTask({ toolName: 'long' });
    const waiting = store.waitForCompletion(taskId);
    // A second instance completes it: only a notification (or the slow poll) can wake the first.
    const other = openStore({ schema });
    await eventually('the waiter registering', async () => {
      const { rows } = await resources.admin.query(`SELECT awaited FROM ${schema}.tasks WHERE task_id = $1`, [taskId]);
      return rows[0]?.awaited === true;
    });
    expect(await other.completeTask(taskId, { content: [] })).toBe(true);
    expect((await within('the waiter waking', waiting))?.task.status).toBe('completed');
  });
});

describe('migration 0004 on a schema at 0003', () => {
  test('copies tool and owner into the history from the tasks and tombstones; until then a store says 0004 is pending', async () => {
    const schema = schemaName('at_0003');
    const db = new Kysely<unknown>({ dialect: new PostgresDialect({ pool: dialectPool(resources.admin, { preparedStatements: false }) }) });
    try {
      const { error } = await new Migrator({ db, ...migratorOptions(schema) }).migrateTo('0003_announce_resumed_tasks');
      expect(error).toBeUndefined();
    } finally {
      await db.destroy(); // leaves the admin pool open: dialectPool never ends it
    }

    // What a 0003 store leaves: a live task, an expired one's tombstone, and their history rows;
    // and a row with nothing left to copy from.
    const [live, expired, orphan] = [generateTaskId(), generateTaskId(), generateTaskId()];
    await resources.admin.query(
      `INSERT INTO ${schema}.tasks (task_id, owner, tool_name, arguments, status, previous_status, status_message, created_at, last_updated_at)
       VALUES ($1, 'alice', 'render', '{}', 'input_required', 'working', 'which format?', now() - interval '1 minute', now())`,
      [live],
    );
    await resources.admin.query(`INSERT INTO ${schema}.tombstones (task_id, owner, expired_at) VALUES ($1, 'bob', now())`, [expired]);
    await resources.admin.query(
      `INSERT INTO ${schema}.task_history (task_id, at, from_status, to_status, message) VALUES
         ($1, now() - interval '1 minute', NULL, 'working', 'Task started'),
         ($1, now(), 'working', 'input_required', 'which format?'),
         ($2, now() - interval '2 minutes', NULL, 'working', 'Task started'),
         ($2, now() - interval '1 minute', 'working', 'completed', 'Task completed'),
         ($3, now(), NULL, 'working', 'Task started')`,
      [live, expired, orphan],
    );

    // This version's store writes the new columns: on a schema without them, it says what to do.
    const store = openStore({ schema });
    const behind = await store.createTask({ toolName: 'too-early' }).catch((error: unknown) => error);
    expect(behind).toMatchObject({ kind: 'backend' });
    expect((behind as Error).message).toContain('not applied: 0004_task_history_views');

    expect(await migrate({ pool: resources.admin, schema })).toEqual({ applied: ALL_MIGRATIONS.slice(ALL_MIGRATIONS.indexOf('0004_task_history_views')) });
    const { rows: history } = await resources.admin.query(`SELECT task_id, tool_name, owner FROM ${schema}.task_history ORDER BY id`);
    expect(history).toEqual([
      { task_id: live, tool_name: 'render', owner: 'alice' },
      { task_id: live, tool_name: 'render', owner: 'alice' },
      { task_id: expired, tool_name: null, owner: 'bob' },
      { task_id: expired, tool_name: null, owner: 'bob' },
      { task_id: orphan, tool_name: null, owner: null },
    ]);
    const { rows: summaries } = await resources.admin.query(
      `SELECT task_id, tool_name, owner, status, transitions::int, live FROM ${schema}.task_summaries ORDER BY task_id`,
    );
    expect(summaries).toEqual(
      [
        { task_id: live, tool_name: 'render', owner: 'alice', status: 'input_required', transitions: 2, live: true },
        { task_id: expired, tool_name: null, owner: 'bob', status: 'completed', transitions: 2, live: false },
        { task_id: orphan, tool_name: null, owner: null, status: 'working', transitions: 1, live: false },
      ].sort((a, b) => (a.task_id < b.task_id ? -1 : 1)),
    );

    // And the store works on the migrated schema, its rows carrying both columns.
    const { taskId } = await store.createTask({ toolName: 'after', owner: 'carol' });
    const { rows: created } = await resources.admin.query(`SELECT tool_name, owner FROM ${schema}.task_history WHERE task_id = $1`, [taskId]);
    expect(created).toEqual([{ tool_name: 'after', owner: 'carol' }]);

    // 0009: a task from before it may have input requests (the reaper looks); a new one has none
    // until it issues one.
    const requestedInput = async (id: string) =>
      (await resources.admin.query(`SELECT requested_input FROM ${schema}.tasks WHERE task_id = $1`, [id])).rows[0].requested_input;
    expect(await requestedInput(live)).toBe(true);
    expect(await requestedInput(taskId)).toBe(false);
    await store.requireInput(taskId, { which: { method: 'roots/list' } });
    expect(await requestedInput(taskId)).toBe(true);
  });
});

describe('schema names', () => {
  const invalid: [string, unknown][] = [
    ['uppercase', 'Mcp'],
    ['a dash', 'a-b'],
    ['an injection attempt', 'x; drop table'],
    ['empty', ''],
    ['64 bytes', 'a'.repeat(64)],
    ['a leading digit', '1abc'],
    ['quoted', '"mcp"'],
    ['a number', 42],
    ['null', null],
    ['an object', { name: 'mcp_tasks' }],
  ];

  test.each(invalid)('%s is refused with invalid_input by migrate and the store, creating nothing', async (_, schema) => {
    const before = await schemaNames();
    const pool = createPool(database.connectionString, 1);
    try {
      const viaPool = await migrate({ pool, schema: schema as string }).catch((error: unknown) => error);
      expectInvalidInput(viaPool);
      const viaUrl = await migrate({ connectionString: database.connectionString, schema: schema as string }).catch(
        (error: unknown) => error,
      );
      expectInvalidInput(viaUrl);

      let store: PostgresTaskStore | undefined;
      try {
        store = new PostgresTaskStore({ pool, schema: schema as string });
      } catch (error) {
        expectInvalidInput(error);
      }
      if (store) {
        await store.close();
        expect.fail(`the store accepted the schema ${JSON.stringify(schema)}`);
      }
      expect(() => new PostgresTaskStore({ connectionString: database.connectionString, schema: schema as string })).toThrow(
        TaskStoreError,
      );
      // Not a single connection was made.
      expect(pool.totalCount).toBe(0);
    } finally {
      await pool.end();
    }
    expect(await schemaNames()).toEqual(before);
  });
});

// -- Isolation ----------------------------------------------------------------------------------

describe('two schemas in one database', () => {
  test('share no rows: a task of one is invisible to a store on the other', async () => {
    const [a, b] = [schemaName('iso_a'), schemaName('iso_b')];
    await migrate({ pool: resources.admin, schema: a });
    await migrate({ pool: resources.admin, schema: b });
    const storeA = openStore({ schema: a });
    const storeB = openStore({ schema: b });

    const { taskId } = await storeA.createTask({ toolName: 'in-a', owner: 'alice' });
    expect((await storeA.listTasks()).tasks.map((task) => task.taskId)).toEqual([taskId]);
    expect(await storeB.getTask(taskId)).toBeNull();
    expect(await storeB.getTaskResult(taskId)).toBeNull();
    expect(await storeB.taskOwner(taskId)).toBeNull();
    expect(await storeB.taskPresence(taskId)).toEqual({ state: 'missing' });
    expect(await storeB.listTasks()).toEqual({ tasks: [], nextCursor: null });
    expect(await storeB.listTasks({ owner: 'alice' })).toEqual({ tasks: [], nextCursor: null });
    expect(await storeB.setStatus(taskId, 'working', 'from b')).toBe(false);
    expect(await storeB.cancelTask(taskId)).toBeNull();
    expect(await storeB.discardTask(taskId)).toBe(false);
    expect((await storeA.getTask(taskId))?.status).toBe('working');
  });

  test('share no reaper: a pass on one leaves the other’s expired rows alone', async () => {
    const [a, b] = [schemaName('iso_a'), schemaName('iso_b')];
    await migrate({ pool: resources.admin, schema: a });
    await migrate({ pool: resources.admin, schema: b });
    const storeA = openStore({ schema: a });
    const storeB = openStore({ schema: b });
    const { taskId } = await storeA.createTask({ toolName: 'expired', ttlMs: 0 });

    expect(await storeB.reapExpired()).toEqual({ tombstoned: 0, purged: 0 });
    expect((await resources.admin.query(`SELECT 1 FROM ${a}.tasks WHERE task_id = $1`, [taskId])).rowCount).toBe(1);
    expect(await storeA.reapExpired()).toEqual({ tombstoned: 1, purged: 0 });
  });

  test('share no notifications: a waiter on one schema is not woken by the other', async () => {
    const [a, b] = [schemaName('iso_a'), schemaName('iso_b')];
    await migrate({ pool: resources.admin, schema: a });
    await migrate({ pool: resources.admin, schema: b });
    expect(notificationChannel(a)).not.toBe(notificationChannel(b));
    const storeA = openStore({ schema: a });
    const storeB = openStore({ schema: b });

    // The same task id in both schemas, both running.
    const { taskId } = await storeA.createTask({ toolName: 'twin' });
    await resources.admin.query(`INSERT INTO ${b}.tasks SELECT * FROM ${a}.tasks WHERE task_id = $1`, [taskId]);

    // Raw listeners on both channels, to see what each schema announces.
    const heard: Record<'a' | 'b', string[]> = { a: [], b: [] };
    for (const [name, schema] of [['a', a], ['b', b]] as const) {
      const client = await resources.client();
      client.on('notification', (message) => heard[name].push(message.payload ?? ''));
      await client.query(`LISTEN "${notificationChannel(schema)}"`);
    }

    const waiterA = storeA.waitForCompletion(taskId);
    const waiterB = storeB.waitForCompletion(taskId);
    await eventually('both waiters registering', async () => {
      const { rows } = await resources.admin.query<{ n: number }>(
        `SELECT (SELECT count(*) FROM ${a}.tasks WHERE task_id = $1 AND awaited)
              + (SELECT count(*) FROM ${b}.tasks WHERE task_id = $1 AND awaited) AS n`,
        [taskId],
      );
      return Number(rows[0]!.n) === 2;
    });

    expect(await storeA.completeTask(taskId, { content: [{ type: 'text', text: 'from a' }] })).toBe(true);
    const snapshotA = await within('the waiter on a waking', waiterA);
    expect(snapshotA?.result).toEqual({ content: [{ type: 'text', text: 'from a' }] });
    await eventually('a’s channel announcing the completion', async () => heard.a.includes(`status:${taskId}`));
    // A marker sent on b's channel after a's commit arrives after anything a's commit sent there.
    await resources.admin.query('SELECT pg_notify($1, $2)', [notificationChannel(b), 'marker']);
    await eventually('the marker on b’s channel', async () => heard.b.includes('marker'));
    expect(heard.b).toEqual(['marker']);

    expect(await stillPending(waiterB, 200)).toBe(true);
    expect((await storeB.getTask(taskId))?.status).toBe('working');

    expect(await storeB.completeTask(taskId, { content: [{ type: 'text', text: 'from b' }] })).toBe(true);
    const snapshotB = await within('the waiter on b waking', waiterB);
    expect(snapshotB?.result).toEqual({ content: [{ type: 'text', text: 'from b' }] });
    await eventually('b’s channel announcing b’s completion', async () => heard.b.length >= 2);
    expect(heard.b).toEqual(['marker', `status:${taskId}`]);
  });
});

// -- The CLI ------------------------------------------------------------------------------------

describe('npx kysely migrate:latest', () => {
  test('applies the same migration as migrate(), recorded in the same table, giving an identical schema', async () => {
    const viaCli = schemaName('via_cli');
    const viaApi = schemaName('via_api');

    const first = await migrateWithCli(viaCli);
    expect(first.stdout + first.stderr).toContain('0001_tasks');
    expect(await tablesOf(viaCli)).toEqual(EXPECTED_TABLES);
    // migrate() finds the CLI's bookkeeping and has nothing left to do, and vice versa.
    expect(await migrate({ pool: resources.admin, schema: viaCli })).toEqual({ applied: [] });
    const again = await migrateWithCli(viaCli);
    expect(again.stdout + again.stderr).not.toContain('0001_tasks');

    expect(await migrate({ pool: resources.admin, schema: viaApi })).toEqual({ applied: ALL_MIGRATIONS });
    const cliAfterApi = await migrateWithCli(viaApi);
    expect(cliAfterApi.stdout + cliAfterApi.stderr).not.toContain('0001_tasks');

    const [cliSchema, apiSchema] = [await describeSchema(viaCli), await describeSchema(viaApi)];
    expect(cliSchema.applied).toEqual(ALL_MIGRATIONS.map((name) => ({ name })));
    expect(cliSchema.columns!.length).toBeGreaterThan(20);
    expect(cliSchema).toEqual(apiSchema);

    // And a store works on the CLI's schema, notifications included.
    const store = openStore({ schema: viaCli });
    const { taskId } = await store.createTask({ toolName: 'cli' });
    const waiting = store.waitForCompletion(taskId);
    const other = openStore({ schema: viaCli });
    await eventually('the waiter registering', async () => {
      const { rows } = await resources.admin.query(`SELECT awaited FROM ${viaCli}.tasks WHERE task_id = $1`, [taskId]);
      return rows[0]?.awaited === true;
    });
    await other.failTask(taskId, { code: -32000, message: 'boom' });
    expect((await within('the waiter waking', waiting))?.task.status).toBe('failed');
    // Three CLI runs, each starting a TypeScript loader: slow on a loaded machine.
  }, 180_000);

  test('refuses an invalid MCP_TASKS_SCHEMA, creating nothing', async () => {
    const before = await schemaNames();
    const failure = await migrateWithCli('Bad-Schema').then(
      () => null,
      (error: unknown) => error as { code?: number; stderr?: string; stdout?: string },
    );
    expect(failure).not.toBeNull();
    expect(failure!.code).not.toBe(0);
    expect(`${failure!.stdout}${failure!.stderr}`).toContain('invalid schema');
    expect(await schemaNames()).toEqual(before);
  }, 60_000);
});
