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
import { normalize, outcomeOf, type Outcome } from '../support/differential.js';
import { tableContents } from '../support/table-contents.js';
import { useTestDatabase } from '../support/test-database.js';
import { BOUND_MS, sleep, within } from '../support/time.js';
import { useNoUnhandledErrors } from '../support/unhandled-errors.js';
import { anyHostile, hostileNumber, hostileString, SQL_FRAGMENTS } from './hostile-values.js';

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
  const sdkClasses = {
    PostgresTaskMessageQueue: (options: never) => new PostgresTaskMessageQueue(options),
    // It never listens, so it takes no `listen`.
    PostgresSessionTaskIndex: ({ listen: _listen, ...options }: Record<string, unknown>) => new PostgresSessionTaskIndex(options as never),
  };

  it('the SDK integration’s PostgresTaskMessageQueue and PostgresSessionTaskIndex: the same connection options, validated alike', async () => {
    await fc.assert(
      fc.asyncProperty(connectionOptions, fc.constantFrom(...Object.keys(sdkClasses)), async (generated, name) => {
        const options = { ...generated, ...(generated.pool === 'the test pool' ? { pool } : {}) };
        const where = `${name}(${fc.stringify(generated)})`;
        const built = construct(() => sdkClasses[name as keyof typeof sdkClasses](options as never));
        if (!('store' in built)) {
          expect(built, where).toStrictEqual({ error: 'invalid_input' });
          return;
        }
        await within(`${where}: close()`, built.store.close());
      }),
      { numRuns: RUNS },
    );
  });

  it('a listener connection string that is not a string is refused by every class that listens, naming the field', async () => {
    for (const build of [
      () => new PostgresTaskStore({ pool, schema: SCHEMA, listen: { connectionString: 5 } } as never),
      () => new PostgresTaskMessageQueue({ pool, schema: SCHEMA, listen: { connectionString: 5 } } as never),
    ]) {
      const error = (() => {
        try {
          build();
        } catch (thrown) {
          return thrown;
        }
        return null;
      })();
      expect(error).toBeInstanceOf(TaskStoreError);
      expect(error).toMatchObject({ kind: 'invalid_input', message: expect.stringContaining('options.listen') });
    }
    expect(() => new PostgresSessionTaskIndex({ pool, connectionString: 5 } as never)).toThrow(/options\.connectionString/);
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
