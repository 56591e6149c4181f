/**
 * Why each index of the hot tables exists, at scale: on a schema bulk-loaded with a realistic mix
 * (task-mix.ts), the store's calls and one reaper pass run for real, and each statement they send is
 * first run under `EXPLAIN (ANALYZE, BUFFERS)` and rolled back, so the plans are the ones the
 * statements get on that data. Each index is listed with its size, the calls whose plans read it,
 * and what it costs every task created: the creation statement timed with the index dropped (in a
 * transaction that is rolled back) against with it, in alternating rounds. Indexes that back a
 * constraint are required, and only listed.
 */
import pg from 'pg';
import { migrate, PostgresTaskStore } from '../../src/index.js';
import { median, scriptPool } from '../support.js';
import { drawnOwner, loadTaskMix, ownerCount, type LoadedRows } from './task-mix.js';

export interface IndexOptions {
  tasks: number;
  /** Rounds of the insert-cost measurement, each with and without every index. */
  rounds: number;
  /** Task creations timed per round and variant. */
  inserts: number;
}

export interface IndexUse {
  call: string;
  node: string;
  executionMs: number;
}

export interface IndexReport {
  table: string;
  index: string;
  definition: string;
  sizeMb: number;
  /** Backs a constraint (a primary key): required, so its insert cost is not measured. */
  constraint: boolean;
  usedBy: IndexUse[];
  /** WAL each created task writes for this index (median over rounds); null: it writes none. */
  walBytesPerTask: number | null;
}

export interface InsertCost {
  us: number;
  walBytes: number;
}

/** A created task with every index, and without those that back no constraint. */
export interface InsertCosts {
  walBytesByIndex: Map<string, number>;
  withThem: InsertCost;
  without: InsertCost;
}

export interface IndexResult {
  options: IndexOptions;
  load: LoadedRows;
  indexes: IndexReport[];
  creation: { withThem: InsertCost; without: InsertCost };
}

const SCHEMA = 'bench_indexes';
const HOT_TABLES = ['tasks', 'task_history', 'tombstones'];

interface Captured {
  call: string;
  text: string;
  plan: PlanNode;
  executionMs: number;
}

interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  Plans?: PlanNode[];
}

/**
 * Runs `work` with every statement it sends explained first (each text once): inside a
 * transaction or a savepoint that is rolled back, so the statement then runs for real on the
 * rows as they were. Statements that cannot be explained (BEGIN, SET) just run; one whose
 * explanation fails is reported and runs too.
 */
async function explainingEach(captured: Captured[], call: string, work: () => Promise<unknown>): Promise<void> {
  const seen = new Set<string>();
  const inTransaction = new WeakSet<pg.Client>();
  const original = pg.Client.prototype.query;
  const explain = async (client: pg.Client, text: string, values: unknown[]) => {
    if (seen.has(text) || !/^\s*(WITH|SELECT|INSERT|UPDATE|DELETE)\b/i.test(text)) return;
    seen.add(text);
    const open = inTransaction.has(client);
    const run = (sql: string, params?: unknown[]) => (original as (q: string, p?: unknown[]) => Promise<pg.QueryResult>).call(client, sql, params);
    await run(open ? 'SAVEPOINT explaining' : 'BEGIN');
    try {
      const { rows } = await run(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${text}`, values);
      const [explained] = rows[0]['QUERY PLAN'] as [{ Plan: PlanNode; 'Execution Time': number }];
      captured.push({ call, text, plan: explained.Plan, executionMs: explained['Execution Time'] });
    } finally {
      await run(open ? 'ROLLBACK TO SAVEPOINT explaining' : 'ROLLBACK');
    }
  };
  pg.Client.prototype.query = function (this: pg.Client, config: unknown, values?: unknown, callback?: unknown) {
    const text = typeof config === 'string' ? config : (config as { text?: string }).text;
    const params = (typeof config === 'string' ? values : (config as { values?: unknown[] }).values) as unknown[] | undefined;
    if (text === undefined || /^\s*(BEGIN|COMMIT|ROLLBACK|SET|SAVEPOINT|RELEASE)\b/i.test(text)) {
      if (text && /^\s*BEGIN/i.test(text)) inTransaction.add(this);
      if (text && /^\s*(COMMIT|ROLLBACK)\s*$/i.test(text)) inTransaction.delete(this);
      return (original as (...a: unknown[]) => unknown).call(this, config, values, callback);
    }
    const client = this;
    const explained = explain(client, text, params ?? []).catch((error: unknown) =>
      console.warn(`  could not explain a statement of ${call}: ${error instanceof Error ? error.message : String(error)}`),
    );
    // A pg.Query answers through its own callback; a text query through the promise returned here.
    if (config instanceof pg.Query) {
      void explained.then(() => (original as (q: unknown) => unknown).call(client, config));
      return undefined;
    }
    return explained.then(() => (original as (...a: unknown[]) => Promise<unknown>).call(client, config, values, callback));
  } as typeof pg.Client.prototype.query;
  try {
    await work();
  } finally {
    pg.Client.prototype.query = original;
  }
}

function indexesRead(node: PlanNode, found: Map<string, string> = new Map()): Map<string, string> {
  if (node['Index Name']) found.set(node['Index Name'], node['Node Type']);
  for (const child of node.Plans ?? []) indexesRead(child, found);
  return found;
}

/** The values of the first column `query` returns. */
async function sample(pool: pg.Pool, query: string): Promise<string[]> {
  const { rows } = await pool.query<{ value: string }>(query);
  return rows.map((row) => row.value);
}

/**
 * The store's calls and a reaper pass, every statement explained. The pass runs on a store of its
 * own with short retention windows, so that it purges tombstones and history too.
 */
async function explainCalls(pool: pg.Pool, store: PostgresTaskStore): Promise<Captured[]> {
  const captured: Captured[] = [];
  const [working, completed, tombstoned, owners] = await Promise.all([
    sample(pool, `SELECT task_id AS value FROM ${SCHEMA}.tasks WHERE status = 'working' AND (expires_at IS NULL OR expires_at > now()) LIMIT 3`),
    sample(pool, `SELECT task_id AS value FROM ${SCHEMA}.tasks WHERE status = 'completed' AND (expires_at IS NULL OR expires_at > now()) LIMIT 1`),
    sample(pool, `SELECT task_id AS value FROM ${SCHEMA}.tombstones LIMIT 1`),
    // The largest owner, and one of median size.
    sample(
      pool,
      `WITH sizes AS (SELECT owner, count(*) AS n FROM ${SCHEMA}.tasks WHERE owner IS NOT NULL GROUP BY owner)
       (SELECT owner AS value FROM sizes ORDER BY n DESC LIMIT 1)
       UNION ALL
       (SELECT owner FROM sizes ORDER BY n OFFSET (SELECT count(*) / 2 FROM sizes) LIMIT 1)`,
    ),
  ]);
  const [largestOwner, typicalOwner] = owners as [string, string];
  const calls: [string, () => Promise<unknown>][] = [
    ['createTask', () => store.createTask({ toolName: 'bench', arguments: { n: 1 }, owner: typicalOwner })],
    ['getTask', () => store.getTask(working[0]!)],
    ['setStatus', () => store.setStatus(working[0]!, 'input_required', 'a question')],
    ['completeTask', () => store.completeTask(working[1]!, { content: [{ type: 'text', text: 'done' }] })],
    ['getTaskResult', () => store.getTaskResult(completed[0]!)],
    ['taskPresence (tombstone)', () => store.taskPresence(tombstoned[0]!)],
    ['listTasks (all owners)', () => store.listTasks()],
    ['listTasks (an owner of median size)', () => store.listTasks({ owner: typicalOwner })],
    ['listTasks (the largest owner)', () => store.listTasks({ owner: largestOwner })],
    // What `status` and the cookbook ask of the rescues view, in plain SQL.
    ['rescues of the last day (task_rescues)', () => pool.query(`SELECT count(*) FROM ${SCHEMA}.task_rescues WHERE at > now() - interval '1 day'`)],
    ['discardTask', () => store.discardTask(working[2]!)],
    [
      'reaper pass',
      async () => {
        const reaping = new PostgresTaskStore({
          pool,
          schema: SCHEMA,
          listen: false,
          reaper: { intervalMs: 2 ** 31 - 1, tombstoneRetentionMs: 60_000, historyRetentionMs: 3 * 86_400_000 },
        });
        // Its first automatic pass starts at once; the one by hand waits for it or does the work.
        await reaping.reapExpired().finally(() => reaping.close());
      },
    ],
  ];
  for (const [call, work] of calls) await explainingEach(captured, call, work);
  return captured;
}

interface IndexRow {
  table: string;
  index: string;
  definition: string;
  size: string;
  constraint: boolean;
}

async function hotIndexes(pool: pg.Pool): Promise<IndexRow[]> {
  const { rows } = await pool.query<IndexRow>(
    `SELECT c.relname AS table, i.relname AS index, pg_get_indexdef(i.oid) AS definition,
            pg_relation_size(i.oid)::text AS size, con.oid IS NOT NULL AS constraint
       FROM pg_index x
       JOIN pg_class i ON i.oid = x.indexrelid
       JOIN pg_class c ON c.oid = x.indrelid
       JOIN pg_namespace n ON n.oid = c.relnamespace
       LEFT JOIN pg_constraint con ON con.conindid = i.oid
      WHERE n.nspname = $1 AND c.relname = ANY($2::text[])
      ORDER BY array_position($2::text[], c.relname::text), i.relname`,
    [SCHEMA, HOT_TABLES],
  );
  return rows;
}

/**
 * What the indexes that back no constraint cost a created task: the creation statement (with its
 * history row) run `inserts` times on the server, in a transaction that first drops one of them,
 * or all, against the same with every index, all rolled back, each run right after a CHECKPOINT.
 * The tasks have ids that sort after every other, so the primary key's inserts all go to its last
 * page and its full-page images are the same few in every run; their owners are drawn as the mix
 * draws them. Per index: the WAL it adds, full-page images of the pages it touches included. For
 * all of them together, the time too (the median of rounds that alternate which goes first): one
 * index alone is below the noise of the timing.
 */
async function insertCosts(pool: pg.Pool, store: PostgresTaskStore, indexes: IndexRow[], options: IndexOptions): Promise<InsertCosts> {
  const statement = await creationStatement(store);
  const literal = (value: unknown) => (value === null ? 'NULL' : typeof value === 'number' ? String(value) : pg.escapeLiteral(String(value)));
  // One statement running them all, so round trips add nothing to the time.
  const insertLoop = `DO $loop$ BEGIN
    FOR i IN 1..${options.inserts} LOOP
      EXECUTE ${pg.escapeLiteral(statement.text)}
        USING 'ffffffff' || lpad(to_hex(i), 24, '0'), ${drawnOwner(String(ownerCount({ tasks: options.tasks })), 'random()')},
              ${statement.values.slice(2).map(literal).join(', ')};
    END LOOP;
  END $loop$`;
  const client = await pool.connect();
  const insertsDropping = async (dropping: string[]): Promise<InsertCost> => {
    await client.query(`VACUUM ${SCHEMA}.tasks, ${SCHEMA}.task_history`);
    await client.query('CHECKPOINT');
    await client.query('BEGIN');
    try {
      for (const index of dropping) await client.query(`DROP INDEX ${SCHEMA}.${index}`);
      const { rows: before } = await client.query<{ lsn: string }>('SELECT pg_current_wal_insert_lsn()::text AS lsn');
      const started = performance.now();
      await client.query(insertLoop);
      const us = ((performance.now() - started) * 1000) / options.inserts;
      const { rows } = await client.query<{ bytes: string }>('SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), $1::pg_lsn)::text AS bytes', [
        before[0]!.lsn,
      ]);
      return { us, walBytes: Number(rows[0]!.bytes) / options.inserts };
    } finally {
      await client.query('ROLLBACK');
    }
  };
  const droppable = indexes.filter((index) => !index.constraint && index.table !== 'tombstones').map((index) => index.index);
  const walBytes = new Map<string, number[]>();
  const together: { withThem: InsertCost[]; without: InsertCost[] } = { withThem: [], without: [] };
  try {
    await insertsDropping([]); // warm-up
    for (let round = 0; round < options.rounds; round++) {
      const withThem = await insertsDropping([]);
      for (const index of droppable) {
        walBytes.set(index, [...(walBytes.get(index) ?? []), withThem.walBytes - (await insertsDropping([index])).walBytes]);
      }
      const pair = round % 2 === 0 ? [withThem, await insertsDropping(droppable)] : [await insertsDropping(droppable), await insertsDropping([])];
      together.withThem.push(round % 2 === 0 ? pair[0]! : pair[1]!);
      together.without.push(round % 2 === 0 ? pair[1]! : pair[0]!);
    }
  } finally {
    client.release();
  }
  const medianCost = (costs: InsertCost[]): InsertCost => ({ us: median(costs.map((c) => c.us)), walBytes: median(costs.map((c) => c.walBytes)) });
  return {
    walBytesByIndex: new Map([...walBytes].map(([index, samples]) => [index, median(samples)])),
    withThem: medianCost(together.withThem),
    without: medianCost(together.without),
  };
}

/** The text and values of the statement createTask sends. */
async function creationStatement(store: PostgresTaskStore): Promise<{ text: string; values: unknown[] }> {
  let statement: { text: string; values: unknown[] } | null = null;
  const original = pg.Client.prototype.query;
  pg.Client.prototype.query = function (this: pg.Client, config: unknown, ...rest: unknown[]) {
    const query = config as { text?: string; values?: unknown[] };
    if (config instanceof pg.Query && /INSERT INTO/.test(query.text ?? '')) statement ??= { text: query.text!, values: query.values! };
    return (original as (...a: unknown[]) => unknown).call(this, config, ...rest);
  } as typeof pg.Client.prototype.query;
  try {
    await store.createTask({ toolName: 'bench', arguments: { n: 1 }, owner: 'owner-1' });
  } finally {
    pg.Client.prototype.query = original;
  }
  return statement!;
}

export async function runIndexBenchmark(connectionString: string, options: IndexOptions): Promise<IndexResult> {
  const admin = scriptPool(connectionString, 2);
  const pool = scriptPool(connectionString, 4);
  await admin.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
  await migrate({ pool: admin, schema: SCHEMA });
  console.log(`index use at ${options.tasks.toLocaleString('en-US')} tasks: loading the mix`);
  const load = await loadTaskMix(admin, SCHEMA, { tasks: options.tasks });
  console.log(`  loaded ${load.tasks} tasks, ${load.history} history rows, ${load.tombstones} tombstones in ${load.seconds.toFixed(0)} s`);
  const store = new PostgresTaskStore({ pool, schema: SCHEMA, listen: false, reaper: false });
  try {
    const captured = await explainCalls(pool, store);
    const indexes = await hotIndexes(admin);
    const costs = await insertCosts(pool, store, indexes, options);
    const reports = indexes.map((index): IndexReport => {
      const usedBy: IndexUse[] = [];
      for (const statement of captured) {
        const node = indexesRead(statement.plan).get(index.index);
        if (node) usedBy.push({ call: statement.call, node, executionMs: statement.executionMs });
      }
      return {
        table: index.table,
        index: index.index,
        definition: index.definition.replace(/^CREATE (UNIQUE )?INDEX \S+ ON \S+ USING btree /, ''),
        sizeMb: Number(index.size) / 2 ** 20,
        constraint: index.constraint,
        usedBy,
        walBytesPerTask: costs.walBytesByIndex.get(index.index) ?? null,
      };
    });
    printReports(reports, costs);
    return { options, load, indexes: reports, creation: { withThem: costs.withThem, without: costs.without } };
  } finally {
    await store.close();
    await admin.query(`DROP SCHEMA ${SCHEMA} CASCADE`);
    await Promise.all([admin.end(), pool.end()]);
  }
}

function printReports(reports: IndexReport[], costs: InsertCosts): void {
  for (const report of reports) {
    const cost = report.constraint
      ? 'backs a constraint'
      : report.walBytesPerTask === null
        ? 'written by no creation'
        : `${report.walBytesPerTask.toFixed(0)} B of WAL per created task`;
    console.log(`  ${report.table}.${report.index} ${report.definition}: ${report.sizeMb.toFixed(1)} MB, ${cost}`);
    if (report.usedBy.length === 0) console.log('    read by none of the calls');
    for (const use of report.usedBy) console.log(`    ${use.call}: ${use.node}, statement ${use.executionMs.toFixed(2)} ms`);
  }
  const { withThem, without } = costs;
  console.log(
    `  a created task on the server: ${withThem.us.toFixed(1)} µs and ${withThem.walBytes.toFixed(0)} B of WAL with every index, ` +
      `${without.us.toFixed(1)} µs and ${without.walBytes.toFixed(0)} B without those that back no constraint`,
  );
}
