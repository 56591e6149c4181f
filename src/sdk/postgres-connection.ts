/**
 * The database handle the SDK integration's PostgreSQL classes share: a caller's pool or one they
 * own, a Kysely instance for the `sql` template and for compiled statements (which skip Kysely's
 * executor, as the store's do: compiled-query.ts), and database failures turned into `backend` errors
 * without credentials, as the task store reports them.
 */
import { Kysely, PostgresDialect, sql, type RawBuilder } from 'kysely';
import type pg from 'pg';
import { TaskStoreError } from '../contract/errors.js';
import { parseOptions } from '../contract/options.js';
import { toBackendError } from '../postgres/backend-error.js';
import { connectionOptionsSchema } from '../postgres/connection-options.js';
import { runCompiledDirectly } from '../postgres/compiled-query.js';
import { createPool, guardPool, storeConnections } from '../postgres/pool.js';
import { DEFAULT_SCHEMA } from '../postgres/schema-name.js';

export interface PostgresConnectionOptions {
  /** A pool the caller owns; `close()` leaves it open. */
  pool?: pg.Pool;
  /** Or: the object creates and owns its pool. */
  connectionString?: string;
  /** Default 'mcp_tasks': the schema the task store uses, migrated by `migrate()`. */
  schema?: string;
}

export class PostgresConnection {
  readonly schema: string;
  readonly pool: pg.Pool;
  readonly db: Kysely<unknown>;
  private readonly releasePool: () => Promise<void>;
  private readonly connectionString: string | undefined;
  private closed = false;

  /**
   * The class that owns the connection validates its options (connection-options.ts); they are
   * checked again here, so a bad one is `invalid_input` naming it whoever passes it. Like the
   * store, it listens for the errors of a caller's pool until `close()`, and of every client it
   * checks out (pool.ts): a connection dying in a restart must not crash the host.
   */
  constructor(given: PostgresConnectionOptions, poolSize: number) {
    const options = parseOptions(connectionOptionsSchema, given);
    this.schema = options.schema ?? DEFAULT_SCHEMA;
    this.connectionString = options.connectionString;
    this.pool = options.pool ?? createPool(options.connectionString, poolSize);
    const stopGuarding = options.pool ? guardPool(options.pool) : null;
    this.releasePool = stopGuarding ? async () => stopGuarding() : () => this.pool.end();
    // Unnamed statements: these classes have no option for PgBouncer in transaction mode.
    const connections = storeConnections(this.pool, { preparedStatements: false });
    this.db = new Kysely<unknown>({ dialect: new PostgresDialect({ pool: connections.dialect }) });
    runCompiledDirectly(this.db, connections.direct);
  }

  /** `<schema>.<name>`, quoted. */
  table(name: string): RawBuilder<unknown> {
    return sql.table(`${this.schema}.${name}`);
  }

  /** Runs a database call, turning driver failures into `backend` errors without credentials. */
  async run<T>(operation: () => Promise<T>): Promise<T> {
    if (this.closed) throw new TaskStoreError('backend', 'closed');
    try {
      return await operation();
    } catch (error) {
      throw toBackendError(error, this.connectionString);
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.releasePool();
  }
}
