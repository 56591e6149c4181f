/**
 * Fuzzing the stores' options. A constructor either builds a store or throws `invalid_input` at
 * once, never anything else; both stores agree on the options they share, down to the defaults they
 * then apply; and no option value, not even connection settings that cannot work, makes anything
 * go unhandled: calls fail with `backend`, and the store closes cleanly.
 */
import fc from 'fast-check';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryTaskStore, migrate, PostgresTaskStore, TaskStoreError, type PostgresTaskStoreOptions } from '../../src/index.js';
import { createPool } from '../../src/postgres/pool.js';
import { PostgresSessionTaskIndex, PostgresTaskMessageQueue } from '../../src/sdk/index.js';
import { PostgresConnection } from '../../src/sdk/postgres-connection.js';
import { normalize, outcomeOf, type Outcome } from '../support/differential.js';
import { tableContents } from '../support/table-contents.js';
import { useTestDatabase } from '../support/test-database.js';
import { BOUND_MS, sleep, within } from '../support/time.js';
import { useNoUnhandledErrors } from '../support/unhandled-errors.js';
import { anyHostile, CallerBug, hostileNumber, hostileString, SQL_FRAGMENTS, THROWING_VALUES, THROWS_AT } from './hostile-values.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 25) * 4;
const SCHEMA = 'fuzz_options';

useNoUnhandledErrors();
const database = useTestDatabase();
let pool: pg.Pool;
beforeAll(async () => {
  pool = createPool(database.connectionString, 4);
  await migrate({ pool, schema: SCHEMA });
});
afterAll(async () => {
  await pool.end();
});

/** What building a store did: the store, or the TaskStoreError kind (anything else is a crash). */
function construct<T>(build: () => T): { store: T } | Outcome {
  try {
    return { store: build() };
  } catch (error) {
    if (error instanceof TaskStoreError) return { error: error.kind };
    return { crash: `${(error as Error)?.name}: ${(error as Error)?.message ?? String(error)}` };
  }
}

/** Closes the store and tells what a store with these options does with one plain task. */
async function behaviour(store: MemoryTaskStore | PostgresTaskStore): Promise<unknown> {
  try {
    const created = await outcomeOf(() => store.createTask({ toolName: 'options' }));
    if (!('value' in created)) return created;
    const { taskId } = created.value as { taskId: string };
    return normalize({ task: await store.getTask(taskId), discarded: await store.discardTask(taskId) }, () => 'the task');
  } finally {
    await within('close()', store.close());
  }
}

const limitValue = fc.oneof(fc.constantFrom(1, 300, 4 * 1024 * 1024, 2 ** 31), hostileNumber, anyHostile);

/** Options both stores take: defaultTtlMs and the limits they both enforce. */
const sharedOptions = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record(
      {
        // A short positive TTL would make the read-back a race with the clock: the values are
        // 0, long ones, and hostile ones.
        defaultTtlMs: fc.oneof(fc.constantFrom(0, 300_000), hostileNumber.filter((n) => !(n > 0 && n < 600_000)), anyHostile.filter((v) => !(typeof v === 'number' && v > 0 && v < 600_000))),
        limits: fc.oneof(
          fc.record(
            { maxPayloadBytes: limitValue, maxTasksPerOwner: limitValue, bogus: fc.constant(1) },
            { requiredKeys: [] },
          ),
          fc.constantFrom(null, [], 'limits', 0, true),
          anyHostile,
        ),
        bogus: fc.constant(true),
      },
      { requiredKeys: [] },
    ),
  },
  { weight: 1, arbitrary: fc.constantFrom<Record<string, unknown>>({ limits: JSON.parse('{"__proto__": {"maxPayloadBytes": 1}}') }, { ['__proto__']: { defaultTtlMs: 5 } }) },
);

describe('options both stores take', () => {
  it('are accepted or refused with invalid_input alike, and then applied alike', async () => {
    await fc.assert(
      fc.asyncProperty(sharedOptions, async (options) => {
        const where = `options ${fc.stringify(options)}`;
        const memory = construct(() => new MemoryTaskStore(options as never));
        const postgres = construct(
          () => new PostgresTaskStore({ ...(options as PostgresTaskStoreOptions), pool, schema: SCHEMA, listen: false, reaper: false }),
        );
        const memoryBehaviour = 'store' in memory ? await behaviour(memory.store) : memory;
        const postgresBehaviour = 'store' in postgres ? await behaviour(postgres.store) : postgres;
        expect(memoryBehaviour, `${where}: the memory store`).not.toHaveProperty('crash');
        expect(postgresBehaviour, `${where}: PostgreSQL`).not.toHaveProperty('crash');
        expect(postgresBehaviour, `${where}: the stores differ`).toStrictEqual(memoryBehaviour);
      }),
      { numRuns: RUNS },
    );
  });

  it('options that are not an object are refused with invalid_input by both, never with a TypeError', async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(hostileString, hostileNumber, fc.constantFrom(null, true, [], [{}], () => ({}))), async (options) => {
        const memory = construct(() => new MemoryTaskStore(options as never));
        const postgres = construct(() => new PostgresTaskStore(options as never));
        expect(postgres, `PostgresTaskStore(${fc.stringify(options)})`).toStrictEqual({ error: 'invalid_input' });
        expect(memory, `MemoryTaskStore(${fc.stringify(options)})`).toStrictEqual({ error: 'invalid_input' });
      }),
      { numRuns: RUNS },
    );
  });
});

describe('options of one store', () => {
  it('MemoryTaskStore: tombstoneRetentionMs and unknown keys', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({ tombstoneRetentionMs: fc.oneof(fc.constantFrom(0, 60_000), hostileNumber, anyHostile), maxTasks: fc.constant(5) }, { requiredKeys: [] }),
        async (options) => {
          const memory = construct(() => new MemoryTaskStore(options as never));
          if ('store' in memory) await memory.store.close();
          else expect(memory, fc.stringify(options)).toStrictEqual({ error: 'invalid_input' });
        },
      ),
      { numRuns: RUNS },
    );
  });

  const schemaName = fc.oneof(
    fc.constantFrom(SCHEMA, 'pg_catalog', 'pg_temp', 'pg_toast', 'pg_temp_1', 'information_schema', 'public', 'PUBLIC', '', 'a'.repeat(64), 'é', '1abc', 'a b'),
    fc.constantFrom(...SQL_FRAGMENTS),
    hostileString,
    anyHostile,
  );
  const listenOption = fc.oneof(
    fc.constantFrom<unknown>(false, {}, undefined),
    fc.constantFrom<unknown>(true, 0, 'yes', null, [], { connectionString: 5 }, { connectionString: '' }, { connectionString: null }, { bogus: 1 }),
    fc.record({ connectionString: fc.oneof(hostileString, anyHostile) }),
    anyHostile,
  );
  const reaperOption = fc.oneof(
    fc.constantFrom<unknown>(false, {}, undefined, { intervalMs: 3_600_000 }),
    fc.record(
      {
        intervalMs: fc.oneof(hostileNumber, anyHostile),
        tombstoneRetentionMs: fc.oneof(hostileNumber, anyHostile),
        batchSize: fc.oneof(hostileNumber, anyHostile),
        bogus: fc.constant(1),
      },
      { requiredKeys: [] },
    ),
    fc.constantFrom<unknown>(true, null, 'fast', []),
    anyHostile,
  );
  const postgresOptions = fc.record(
    {
      schema: schemaName,
      listen: listenOption,
      reaper: reaperOption,
      preparedStatements: fc.oneof(fc.boolean(), fc.constantFrom<unknown>('yes', 1, null), anyHostile),
      pool: fc.oneof(
        { weight: 6, arbitrary: fc.constant('the test pool') },
        { weight: 1, arbitrary: fc.constantFrom<unknown>({}, 'pool', 42, true, [], { query: 'not a function' }) },
      ),
      connectionString: fc.oneof(fc.constantFrom<unknown>(5, {}, [], true), anyHostile),
      lockTimeoutMs: fc.oneof(fc.constantFrom(1, 300, 60_000), hostileNumber, anyHostile),
      backstopPollMs: fc.oneof(fc.constantFrom(1, 250, 60_000), hostileNumber, anyHostile),
      maxTasks: fc.constant(10),
      bogus: fc.constant(1),
    },
    { requiredKeys: ['pool'] },
  );

  it('PostgresTaskStore: schema, listen, reaper, preparedStatements, pool, connectionString, lockTimeoutMs, backstopPollMs', async () => {
    const tablesBefore = await tableContents(pool, SCHEMA);
    await fc.assert(
      fc.asyncProperty(postgresOptions, async (generated) => {
        const options = { ...generated, ...(generated.pool === 'the test pool' ? { pool } : {}) };
        const where = `PostgresTaskStore(${fc.stringify(generated)})`;
        const built = construct(() => new PostgresTaskStore(options as never));
        if (!('store' in built)) {
          expect(built, where).toStrictEqual({ error: 'invalid_input' });
          return;
        }
        // Accepted: whatever the store then meets, its calls fail as TaskStoreErrors and closing works.
        try {
          const read = await outcomeOf(() => built.store.getTask('f'.repeat(32)));
          if (!('value' in read)) expect(read, `${where}: getTask`).toStrictEqual({ error: 'backend' });
        } finally {
          await within(`${where}: close()`, built.store.close());
        }
      }),
      { numRuns: RUNS },
    );
    // Only stores on valid options ran, and only reads: the tables are as they were.
    expect(await tableContents(pool, SCHEMA)).toStrictEqual(tablesBefore);
  });

  const connectionOptions = fc.record(
    {
      schema: schemaName,
      listen: listenOption,
      pool: fc.oneof(
        { weight: 6, arbitrary: fc.constant('the test pool') },
        { weight: 1, arbitrary: fc.constantFrom<unknown>({}, 'pool', 42, true, [], { query: 'not a function' }) },
      ),
      connectionString: fc.oneof(fc.constantFrom<unknown>(5, {}, [], true), anyHostile),
      bogus: fc.constant(1),
    },
    { requiredKeys: ['pool'] },
  );

  it('every constructor that takes connection options: any combination builds, or is invalid_input naming a field it was given', async () => {
    await fc.assert(
      fc.asyncProperty(connectionOptions, fc.constantFrom(...Object.keys(CONNECTION_TAKERS)), async (generated, name) => {
        const taker = CONNECTION_TAKERS[name]!;
        const given = { ...generated, ...(generated.pool === 'the test pool' ? { pool } : {}) };
        const options = taker.listens ? given : (({ listen: _listen, ...rest }) => rest)(given);
        const where = `${name}(${fc.stringify(options)})`;
        const built = await build(() => taker.build(options));
        if ('error' in built) {
          expect(built.error, where).toBeInstanceOf(TaskStoreError);
          const { kind, message } = built.error as TaskStoreError;
          expect(kind, `${where}: ${message}`).toBe('invalid_input');
          const named = Object.keys(options).some((field) => message.startsWith(`invalid options.${field}`) || message.includes(`"${field}"`));
          expect(named || message.includes('give a pool or a connectionString'), `${where}: names no field: ${message}`).toBe(true);
        }
      }),
      { numRuns: RUNS },
    );
  });
});

/**
 * Each public class (and function) that takes connection options, and the SDK's internal
 * connection they share; `build` closes what it built, so only a refusal is left to see.
 */
const CONNECTION_TAKERS: Record<string, { listens: boolean; build(options: unknown): Promise<unknown> }> = {
  PostgresTaskStore: { listens: true, build: (options) => new PostgresTaskStore(options as never).close() },
  PostgresTaskMessageQueue: { listens: true, build: (options) => new PostgresTaskMessageQueue(options as never).close() },
  PostgresSessionTaskIndex: { listens: false, build: (options) => new PostgresSessionTaskIndex(options as never).close() },
  PostgresConnection: { listens: false, build: (options) => new PostgresConnection(options as never, 1).close() },
  // It migrates for real when the options are valid: the test schema, already up to date.
  migrate: { listens: false, build: (options) => migrate(options as never) },
};

/** What building (and closing) did: nothing, or what it threw or rejected with. */
async function build(make: () => Promise<unknown>): Promise<{ built: true } | { error: unknown }> {
  try {
    await within('building and closing', Promise.resolve().then(make));
    return { built: true };
  } catch (error) {
    return { error };
  }
}

describe('connection options whose reading throws, in every constructor that takes them', () => {
  const FIELDS = ['pool', 'connectionString', 'schema', 'listen'] as const;
  /** Where the hostile value sits: the field a getter that throws, the field's value, inside `listen`. */
  const placements = {
    'a getter on the field': (field: string) =>
      Object.defineProperty({ pool, schema: SCHEMA }, field, { enumerable: true, get: () => { throw new CallerBug(`${field} getter boom`); } }),
    'the field’s value': (field: string, hostile: () => object) => ({ pool, schema: SCHEMA, [field]: hostile() }),
    'listen.connectionString': (_field: string, hostile: () => object) => ({ pool, schema: SCHEMA, listen: { connectionString: hostile() } }),
  };

  it('are invalid_input naming the field, with the caller’s error as cause when a read threw; nothing goes unhandled', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...Object.keys(CONNECTION_TAKERS)),
        fc.constantFrom(...FIELDS),
        fc.constantFrom(...Object.keys(placements)),
        fc.constantFrom(...Object.keys(THROWING_VALUES), 'a number', 'a string that is not one'),
        async (name, field, placement, hostileName) => {
          const taker = CONNECTION_TAKERS[name]!;
          const named = placement === 'listen.connectionString' ? 'listen' : field;
          if (named === 'listen' && !taker.listens) return;
          const hostile = THROWING_VALUES[hostileName] ?? (() => (hostileName === 'a number' ? (5 as never) : (Object('') as object)));
          const options = placements[placement as keyof typeof placements](field, hostile);
          const where = `${name}: ${hostileName} as ${placement} ${named}`;
          const built = await build(() => taker.build(options));
          expect(built, `${where}: accepted`).toHaveProperty('error');
          const error = (built as { error: unknown }).error;
          expect(error, `${where}: ${String(error)}`).toBeInstanceOf(TaskStoreError);
          const { kind, message, cause } = error as TaskStoreError;
          expect(kind, `${where}: ${message}`).toBe('invalid_input');
          expect(message, where).toMatch(new RegExp(`^invalid options\\.${named}[.:]`));
          if (message.includes('reading it threw')) expect(cause, `${where}: the cause`).toBeInstanceOf(CallerBug);
        },
      ),
      { numRuns: RUNS },
    );
    // Whatever a refused constructor started (nothing, it should be) has had time to fail.
    await sleep(50);
  });

  it('options that are themselves a throwing proxy are refused naming `options`, in every constructor', async () => {
    for (const [name, taker] of Object.entries(CONNECTION_TAKERS)) {
      for (const [hostileName, hostile] of Object.entries(THROWING_VALUES).filter(([what]) => what.startsWith('a proxy'))) {
        const built = await build(() => taker.build(hostile()));
        expect(built, `${name}(${hostileName})`).toMatchObject({ error: { kind: 'invalid_input', message: expect.stringMatching(/^invalid options[.:]/) } });
        expect((built as { error: Error }).error.cause, `${name}(${hostileName}): the cause`).toBeInstanceOf(CallerBug);
      }
    }
  });
});

describe('option groups whose reading throws, on both stores', () => {
  /** Where a group sits in the options, and the options holding `value` there. */
  const GROUPS: Record<string, { postgresOnly?: true; options(value: unknown): Record<string, unknown> }> = {
    limits: { options: (value) => ({ limits: value }) },
    leases: { options: (value) => ({ leases: value }) },
    'leases.tools': { options: (value) => ({ leases: { tools: value } }) },
    'leases.tools.slow': { options: (value) => ({ leases: { tools: { slow: value } } }) },
    reaper: { postgresOnly: true, options: (value) => ({ reaper: value }) },
  };
  const STORES = {
    MemoryTaskStore: (options: Record<string, unknown>) => new MemoryTaskStore(options as never),
    PostgresTaskStore: (options: Record<string, unknown>) => new PostgresTaskStore({ pool, schema: SCHEMA, reaper: false, ...options } as never),
  };

  it('are invalid_input naming the field inside the group that threw, with the caller’s error as cause', async () => {
    for (const [group, { postgresOnly, options }] of Object.entries(GROUPS)) {
      for (const [hostileName, hostile] of Object.entries(THROWING_VALUES)) {
        for (const [storeName, open] of Object.entries(STORES)) {
          if (postgresOnly && storeName !== 'PostgresTaskStore') continue;
          const where = `${storeName}: ${hostileName} as options.${group}`;
          let error: unknown;
          try {
            await open(options(hostile())).close();
          } catch (thrown) {
            error = thrown;
          }
          expect(error, `${where}: accepted`).toBeInstanceOf(TaskStoreError);
          const { kind, message, cause } = error as TaskStoreError;
          expect(kind, `${where}: ${message}`).toBe('invalid_input');
          if (!message.includes('reading it threw')) {
            expect(message, where).toMatch(new RegExp(`^invalid options\\.${group.replaceAll('.', '\\.')}[.:]`));
            continue;
          }
          const key = THROWS_AT[hostileName];
          expect(message, where).toMatch(new RegExp(`^invalid options\\.${group.replaceAll('.', '\\.')}${key ? `\\.${key}` : ''}: `));
          expect(cause, `${where}: the cause`).toBeInstanceOf(CallerBug);
        }
      }
    }
  });
});

describe('connection settings that cannot work', () => {
  /** Loopback only: each fails locally, fast (a refused port, a bad certificate path, bad syntax). */
  const BAD_CONNECTIONS = [
    'postgres://postgres:secret@127.0.0.1:99999/db',
    'postgres://postgres:secret@127.0.0.1:1/db',
    'postgres://postgres:secret@127.0.0.1:1/db?sslmode=verify-full&sslrootcert=/nonexistent/root.crt',
    'postgres://postgres:secret@127.0.0.1:1/db?sslmode=require&sslcert=/nonexistent/client.crt&sslkey=/nonexistent/client.key',
    'postgres://postgres:secret@127.0.0.1:1/%E0%A4%A',
    'postgres://postgres:secret@127.0.0.1:1/db?options=-c%20statement_timeout%3Dabc',
    'postgres://127.0.0.1:1/db?connect_timeout=-5',
  ];

  for (const connectionString of BAD_CONNECTIONS) {
    it(`${connectionString.replace('secret', '***')}: refused at once, or every call fails with backend; nothing crashes`, async () => {
      for (const options of [
        { connectionString },
        { pool, schema: SCHEMA, listen: { connectionString } },
      ] as PostgresTaskStoreOptions[]) {
        const built = construct(() => new PostgresTaskStore({ ...options, reaper: { intervalMs: 50 } }));
        if (!('store' in built)) {
          expect(built).toStrictEqual({ error: 'invalid_input' });
          continue;
        }
        const store = built.store;
        try {
          if (options.connectionString !== undefined) {
            for (const call of [() => store.createTask({ toolName: 'nowhere' }), () => store.getTask('f'.repeat(32)), () => store.waitForCompletion('f'.repeat(32))]) {
              const outcome = await within('a call on unusable settings', outcomeOf(call));
              expect(outcome).toStrictEqual({ error: 'backend' });
            }
          } else {
            // The pool is fine; only the listener cannot connect. The store works, polling.
            const { taskId } = await store.createTask({ toolName: 'polling' });
            const waiting = store.waitForCompletion(taskId);
            await store.completeTask(taskId, { content: [] });
            expect((await within('the wait, by polling', waiting, BOUND_MS))?.task.status).toBe('completed');
            await store.discardTask(taskId);
          }
          // Let the listener and the reaper fail a few times in the background.
          await sleep(200);
        } finally {
          await within('close()', store.close());
        }
      }
      // The SDK message queue's listener, on the same settings, fails in the background alike.
      const queue = new PostgresTaskMessageQueue({ pool, schema: SCHEMA, listen: { connectionString } });
      try {
        await sleep(200);
        expect(queue.listening).toBe(false);
      } finally {
        await within('the queue’s close()', queue.close());
      }
    });
  }
});
