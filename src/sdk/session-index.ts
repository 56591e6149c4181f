/**
 * Which session created each unowned task, so that `tasks/list` for a caller without a principal
 * lists its own session's tasks and nobody else's. Tasks of authenticated callers are listed by
 * owner and never recorded here.
 */
import { comparePositions, decodeCursor, encodeCursor, type ListPosition } from '../contract/listing.js';
import { sql } from 'kysely';
import { z } from 'zod';
import { parseOptions } from '../contract/options.js';
import { compileQuery, type CompiledStatement } from '../postgres/compiled-query.js';
import { connectionFields, requiringConnection } from '../postgres/connection-options.js';
import { PostgresConnection, type PostgresConnectionOptions } from './postgres-connection.js';

export interface SessionTaskPage {
  /** In creation order. May name tasks that expired since; the adapter skips those. */
  taskIds: string[];
  nextCursor?: string;
}

export interface SessionTaskIndex {
  add(taskId: string, sessionId: string, createdAt: string): Promise<void>;
  /** Throws `invalid_input` for a cursor this index did not issue. */
  page(sessionId: string, cursor: string | undefined, limit: number): Promise<SessionTaskPage>;
  /** Tasks the adapter found gone (expired or discarded): an index may drop them. */
  forget(taskIds: string[]): void;
  close(): Promise<void>;
}

/**
 * In process memory, for `MemoryTaskStore` (whose tasks live in one process too). Keeps at most
 * `maxEntries` tasks, dropping the oldest first.
 */
export class MemorySessionTaskIndex implements SessionTaskIndex {
  private readonly sessions = new Map<string, ListPosition[]>();
  private readonly sessionOf = new Map<string, string>();

  constructor(private readonly maxEntries = 10_000) {}

  async add(taskId: string, sessionId: string, createdAt: string): Promise<void> {
    const positions = this.sessions.get(sessionId) ?? [];
    positions.push({ createdAtMs: Date.parse(createdAt), taskId });
    positions.sort(comparePositions);
    this.sessions.set(sessionId, positions);
    this.sessionOf.set(taskId, sessionId);
    if (this.sessionOf.size > this.maxEntries) this.forget([this.sessionOf.keys().next().value!]);
  }

  async page(sessionId: string, cursor: string | undefined, limit: number): Promise<SessionTaskPage> {
    const after = cursor === undefined ? null : decodeCursor(cursor);
    const positions = (this.sessions.get(sessionId) ?? []).filter((p) => !after || comparePositions(p, after) > 0);
    const page = positions.slice(0, limit);
    const last = page[page.length - 1];
    return {
      taskIds: page.map((p) => p.taskId),
      ...(positions.length > limit && last ? { nextCursor: encodeCursor(last) } : {}),
    };
  }

  forget(taskIds: string[]): void {
    for (const taskId of taskIds) {
      const sessionId = this.sessionOf.get(taskId);
      if (sessionId === undefined) continue;
      this.sessionOf.delete(taskId);
      const remaining = this.sessions.get(sessionId)!.filter((p) => p.taskId !== taskId);
      if (remaining.length > 0) this.sessions.set(sessionId, remaining);
      else this.sessions.delete(sessionId);
    }
  }

  async close(): Promise<void> {}
}

const sessionIndexOptionsSchema = requiringConnection(z.strictObject(connectionFields));

/**
 * In the task store's schema (`task_sessions`, migration 0002), for `PostgresTaskStore`: the rows
 * go with their task when it is discarded or reaped (the store deletes them), and pages leave out
 * expired tasks.
 */
export class PostgresSessionTaskIndex implements SessionTaskIndex {
  private readonly connection: PostgresConnection;
  private readonly insert: CompiledStatement<{ taskId: string; sessionId: string; createdAt: string }, never>;

  /** Options are validated up front: a bad one throws `invalid_input` naming it. */
  constructor(options: PostgresConnectionOptions) {
    const c = (this.connection = new PostgresConnection(parseOptions(sessionIndexOptionsSchema, options), 2));
    // The share lock on the task row keeps it from being deleted until this commits, as a
    // foreign key would (migration 0006): a task that is gone gets no row.
    this.insert = compileQuery(c.db, (param) => sql<never>`
      INSERT INTO ${c.table('task_sessions')} (task_id, session_id, created_at)
      SELECT task_id, ${param('sessionId')}::text, ${param('createdAt')}::timestamptz FROM ${c.table('tasks')}
       WHERE task_id = ${param('taskId')} FOR KEY SHARE`);
  }

  async add(taskId: string, sessionId: string, createdAt: string): Promise<void> {
    await this.connection.run(() => this.insert.execute(this.connection.db, { taskId, sessionId, createdAt }));
  }

  async page(sessionId: string, cursor: string | undefined, limit: number): Promise<SessionTaskPage> {
    const after = cursor === undefined ? null : decodeCursor(cursor);
    const c = this.connection;
    const { rows } = await c.run(() =>
      sql<{ task_id: string; created_at: Date }>`
        SELECT s.task_id, s.created_at
          FROM ${c.table('task_sessions')} AS s
          JOIN ${c.table('tasks')} AS t ON t.task_id = s.task_id AND (t.expires_at IS NULL OR t.expires_at > now())
         WHERE s.session_id = ${sessionId}
           AND ${after ? sql`(s.created_at, s.task_id) > (to_timestamp(${after.createdAtMs}::float8 / 1000), ${after.taskId})` : sql`true`}
         ORDER BY s.created_at, s.task_id
         LIMIT ${limit + 1}`.execute(c.db),
    );
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return {
      taskIds: page.map((row) => row.task_id),
      ...(rows.length > limit && last
        ? { nextCursor: encodeCursor({ createdAtMs: last.created_at.getTime(), taskId: last.task_id }) }
        : {}),
    };
  }

  /** Nothing to do: rows leave with their task. */
  forget(): void {}

  close(): Promise<void> {
    return this.connection.close();
  }
}
