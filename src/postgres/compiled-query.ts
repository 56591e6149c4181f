/**
 * Kysely queries built and compiled once, then run with new values each time. Building and
 * compiling a query costs more client CPU than the database spends running the store's short
 * statements, so the statements every task runs through are compiled up front.
 *
 * For the same reason a statement run on the store's own Kysely instance (not in a transaction)
 * skips Kysely's executor and goes straight to a pooled connection, through the runner the store
 * registered for that instance with {@link runCompiledDirectly}: about 50 µs of client CPU less
 * per statement, measured (bench/findings.md). A transaction's statements run on its connection.
 */
import type { Compilable, CompiledQuery, Kysely, QueryResult, RawBuilder } from 'kysely';

/** Runs one statement's text and values on a connection of its own, as Kysely's driver would. */
export type DirectRunner = (text: string, parameters: unknown[]) => Promise<QueryResult<any>>;

const directRunners = new WeakMap<Kysely<any>, DirectRunner>();

/** Compiled statements executed on `db` itself run through `run` from now on. */
export function runCompiledDirectly(db: Kysely<any>, run: DirectRunner): void {
  directRunners.set(db, run);
}

class Parameter {
  constructor(readonly name: string) {}
}

/** Stands for a value supplied at execution time; typed as the value it stands for. */
type ParameterOf<P> = <K extends keyof P & string>(name: K) => P[K];

export interface CompiledStatement<P, R> {
  execute(db: Kysely<any>, values: P): Promise<QueryResult<R>>;
}

/**
 * `build` receives a function naming each run-time value; everything else in the query is fixed
 * at compile time.
 *
 * ```ts
 * const getStatus = compileQuery<{ id: string }, { status: string }>(db, (param) =>
 *   db.selectFrom('tasks').select('status').where('task_id', '=', param('id')));
 * const { rows } = await getStatus.execute(db, { id });
 * ```
 */
export function compileQuery<P, R>(
  db: Kysely<any>,
  build: (param: ParameterOf<P>) => Compilable<R> | RawBuilder<R>,
): CompiledStatement<P, R> {
  // A query builder compiles on its own; raw SQL needs the Kysely instance that will run it.
  const compiled: CompiledQuery<R> = build(((name: string) => new Parameter(name)) as ParameterOf<P>).compile(db);
  const bindings = compiled.parameters.map((value) => (value instanceof Parameter ? value.name : { fixed: value }));
  return {
    execute(db, values) {
      const parameters = bindings.map((binding) =>
        typeof binding === 'string' ? (values as Record<string, unknown>)[binding] : binding.fixed,
      );
      const direct = directRunners.get(db);
      return direct ? direct(compiled.sql, parameters) : db.executeQuery({ ...compiled, parameters });
    },
  };
}
