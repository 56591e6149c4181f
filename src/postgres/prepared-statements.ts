/**
 * Runs every parameterized query as a named prepared statement, so PostgreSQL parses and plans
 * each statement once per connection instead of once per call. The store's statements are a small
 * fixed set (one text per query shape), so the number of statements per connection stays small.
 *
 * Behind PgBouncer in transaction mode before version 1.21, named statements do not survive
 * between transactions: turn this off there (`preparedStatements: false`).
 */
import { createHash } from 'node:crypto';
import type { PostgresPool, PostgresPoolClient } from 'kysely';
import type pg from 'pg';

/** A safety net: far more than the store's own statements, and a bound on server memory. */
const MAX_STATEMENTS = 200;

/** A pool for Kysely's PostgresDialect whose clients prepare what they run. */
export function preparingPool(pool: pg.Pool): PostgresPool {
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
  return {
    async connect(): Promise<PostgresPoolClient> {
      const client = await pool.connect();
      return {
        // A query without parameters may hold several statements (a migration), which only the
        // simple protocol runs: those go through unnamed.
        query: ((text: string, values: unknown[]) => {
          const name = values.length > 0 ? nameOf(text) : undefined;
          return name ? client.query({ name, text, values }) : client.query(text, values);
        }) as unknown as PostgresPoolClient['query'],
        release: (destroy?: boolean) => client.release(destroy),
      };
    },
    // The pool belongs to the store or its caller, who ends it; Kysely never does.
    end: async () => {},
  };
}
