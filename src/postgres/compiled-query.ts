/**
 * Kysely queries built and compiled once, then run with new values each time. Building and
 * compiling a query costs more client CPU than the database spends running the store's short
 * statements, so the statements every task runs through are compiled up front.
 */
import type { Compilable, CompiledQuery, Kysely, QueryResult, RawBuilder } from 'kysely';

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
      return db.executeQuery({ ...compiled, parameters });
    },
  };
}
