/**
 * The connections the package uses, and why none of them can crash the host process.
 *
 * node-postgres reports a connection that dies (a terminated backend, a server restart, a failover)
 * as an 'error' event on its client, and an 'error' event nobody listens to throws. pg-pool listens
 * only while a client is idle, and then re-emits the error on the pool, where again nobody may
 * listen. So:
 *
 * - every pool the store uses has an 'error' listener, and gives each client it connects an error
 *   listener of its own, before handing it out: the store's own pools always, a caller's pool
 *   from the store's construction until its `close()`;
 * - a client connected before that gets its listener when the store first checks it out.
 *
 * A query in flight fails with the error anyway (and reaches the caller as `backend`); pg-pool
 * discards a client that is no longer queryable when it is released, and the next call simply
 * gets another connection, so the store recovers by itself.
 */
import { createHash } from 'node:crypto';
import type { PostgresPool, PostgresPoolClient } from 'kysely';
import type { DirectRunner } from './compiled-query.js';
import pg from 'pg';

const ignoreError = (): void => {};
const guardClient = (client: pg.Client): void => {
  if (!client.listeners('error').includes(ignoreError)) client.on('error', ignoreError);
};

/** A pool this package creates and ends itself. */
export function createPool(connectionString: string | undefined, max: number): pg.Pool {
  const pool = new pg.Pool({ connectionString, max });
  guardPool(pool);
  return pool;
}

/**
 * Listens for the errors of a pool and of every client it connects from now on. Returns the
 * function that stops listening on the pool (clients keep their listener; it does nothing).
 */
export function guardPool(pool: pg.Pool): () => void {
  pool.on('error', ignoreError);
  pool.on('connect', guardClient);
  return () => {
    pool.off('error', ignoreError);
    pool.off('connect', guardClient);
  };
}

/**
 * Run statements as named prepared statements, parsed and planned once per connection instead of
 * once per call. The store's statements are a small fixed set (one text per query shape), so the
 * number per connection stays small. Behind PgBouncer in transaction mode before 1.21, named
 * statements do not survive between transactions: turn this off there.
 */
interface StatementOptions {
  preparedStatements: boolean;
}

/** A safety net: far more than the store's own statements, and a bound on server memory. */
const MAX_STATEMENTS = 200;

type RunOn = (client: pg.PoolClient, text: string, values: unknown[]) => Promise<pg.QueryResult>;

/** How a client runs a statement: named when it may be prepared, else unnamed. */
function statementRunner(options: StatementOptions): RunOn {
  const names = new Map<string, string>();
  /** The statement's name, or undefined once so many texts were seen that something is off. */
  const nameOf = (text: string): string | undefined => {
    let name = names.get(text);
    if (name === undefined && names.size < MAX_STATEMENTS) {
      name = `mcp_tasks_${createHash('sha256').update(text).digest('hex').slice(0, 24)}`;
      names.set(text, name);
    }
    return name;
  };
  return (client, text, values) => {
    // A query without parameters may hold several statements (a migration), which only the
    // simple protocol runs: those go through unnamed.
    const name = options.preparedStatements && values.length > 0 ? nameOf(text) : undefined;
    return name ? runNamed(client, name, text, values) : client.query(text, values);
  };
}

/**
 * `client.query({ name, text, values })`, without the copy node-postgres makes of a config
 * object's property descriptors on every call (about 10 µs of CPU a query, bench/findings.md):
 * a query built from its text is handed over as it is.
 */
function runNamed(client: pg.PoolClient, name: string, text: string, values: unknown[]): Promise<pg.QueryResult> {
  return new Promise((resolve, reject) => {
    const query = new pg.Query(text, values, (error, result) => (error ? reject(error) : resolve(result)));
    client.query(Object.assign(query, { name }));
  });
}

/** What the store runs on: Kysely's pool, and the direct path for its compiled statements. */
export interface StoreConnections {
  dialect: PostgresPool;
  direct: DirectRunner;
}

/**
 * The pool Kysely's PostgresDialect runs on, and a direct runner for compiled statements on the
 * same connections (compiled-query.ts says why). Their clients keep an error listener (see above)
 * and, if asked, prepare what they run. Ending the dialect's pool is a no-op: the pool belongs to
 * the store or its caller, who ends it; Kysely never does.
 */
export function storeConnections(pool: pg.Pool, options: StatementOptions): StoreConnections {
  const runOn = statementRunner(options);
  // One wrapper per connection, so Kysely keeps one connection object per connection too.
  const wrappers = new WeakMap<pg.PoolClient, PostgresPoolClient>();
  const wrap = (client: pg.PoolClient): PostgresPoolClient => {
    guardClient(client);
    return {
      query: ((text: string, values: unknown[]) => runOn(client, text, values)) as unknown as PostgresPoolClient['query'],
      // pg-pool gives the client a new release function at every checkout.
      release: (destroy?: boolean) => client.release(destroy),
    };
  };
  const checkout = async (): Promise<pg.PoolClient> => {
    const client = await pool.connect();
    if (!wrappers.has(client)) wrappers.set(client, wrap(client));
    return client;
  };
  return {
    dialect: {
      connect: async () => wrappers.get(await checkout())!,
      end: async () => {},
    },
    // What Kysely's PostgresConnection returns, without its executor's layers around it.
    async direct(text, parameters) {
      const client = await checkout();
      try {
        const { command, rowCount, rows } = await runOn(client, text, parameters);
        const changing = command === 'INSERT' || command === 'UPDATE' || command === 'DELETE' || command === 'MERGE';
        return { rows: rows ?? [], numAffectedRows: changing ? BigInt(rowCount ?? 0) : undefined };
      } finally {
        client.release();
      }
    },
  };
}

/** The pool for a Kysely instance of its own (the migrator, the command line, tests). */
export function dialectPool(pool: pg.Pool, options: StatementOptions): PostgresPool {
  return storeConnections(pool, options).dialect;
}
