/**
 * The SDK's `TaskMessageQueue` in the task store's schema (`task_messages`, migration 0002): one
 * durable FIFO per task and session. A message queued on one instance can be dequeued on another,
 * and the queue goes with its task when the task is discarded or reaped.
 *
 * Enqueueing NOTIFYs on the store's channel (`message:<task id>`), which is how a `tasks/result`
 * blocked on another instance learns that there is something to deliver (`waitForMessage`).
 */
import { sql, type Transaction } from 'kysely';
import type { QueuedMessage, TaskMessageQueue } from '@modelcontextprotocol/sdk/experimental/tasks/interfaces.js';
import { z } from 'zod';
import { invalidInput, readingThrew, TaskStoreError } from '../contract/errors.js';
import { parse } from '../contract/validation.js';
import { parseOptions } from '../contract/options.js';
import { compileQuery } from '../postgres/compiled-query.js';
import { connectionFields, listenSchema, requiringConnection } from '../postgres/connection-options.js';
import { listenerFor, type NotificationListener } from '../postgres/listener.js';
import { notificationChannel } from '../postgres/schema-name.js';
import { PostgresConnection, type PostgresConnectionOptions } from './postgres-connection.js';

export interface PostgresTaskMessageQueueOptions extends PostgresConnectionOptions {
  /**
   * LISTEN/NOTIFY for `waitForMessage`. `false` = poll every second instead (e.g. behind PgBouncer
   * in transaction mode); `connectionString` = a direct connection for the listener alone.
   */
  listen?: false | { connectionString?: string };
}

/** How often waiters look for messages while notifications cannot be relied on. */
const BACKSTOP_POLL_MS = 1000;
const NOTIFY_PREFIX = 'message:';

const queuedMessageSchema = z.looseObject({
  type: z.enum(['request', 'notification', 'response', 'error']),
  message: z.record(z.string(), z.unknown()),
  timestamp: z.number(),
});
const sessionSchema = z.string().optional();
const messageQueueOptionsSchema = requiringConnection(z.strictObject({ ...connectionFields, listen: listenSchema.optional() }));
const maxSizeSchema = z.number().int().min(0).optional();

/**
 * The queue's statements, compiled once per queue. A null session is the queue of messages sent
 * outside any session. One text serves both: planned for its values each time (the statements
 * are unnamed), the condition folds to `session_id = …` or `session_id IS NULL`, which the queue's
 * index answers (`IS NOT DISTINCT FROM` would not fold, and scans every message).
 */
function queueStatements(c: PostgresConnection, channel: string) {
  type Queue = { taskId: string; sessionId: string | null };
  const inQueue = (param: (name: keyof Queue) => unknown) => sql`task_id = ${param('taskId')}
    AND (session_id = ${param('sessionId')}::text OR (${param('sessionId')}::text IS NULL AND session_id IS NULL))`;
  return {
    append: compileQuery<Queue & { json: string }, { queued: unknown }>(c.db, (param) => sql`
      WITH queued AS (
        INSERT INTO ${c.table('task_messages')} (task_id, session_id, message)
        SELECT task_id, ${param('sessionId')}::text, ${param('json')}::jsonb
          FROM ${c.table('tasks')}
         WHERE task_id = ${param('taskId')} AND (expires_at IS NULL OR expires_at > now())
           FOR KEY SHARE -- the task row stays until this commits (migration 0006)
        RETURNING task_id)
      SELECT pg_notify(${channel}, ${NOTIFY_PREFIX} || task_id) AS queued FROM queued`),
    size: compileQuery<Queue, { size: number }>(c.db, (param) => sql`
      SELECT count(*)::int AS size FROM ${c.table('task_messages')} WHERE ${inQueue(param)}`),
    takeOldest: compileQuery<Queue, { message: QueuedMessage }>(c.db, (param) => sql`
      DELETE FROM ${c.table('task_messages')}
       WHERE position = (
         SELECT position FROM ${c.table('task_messages')}
          WHERE ${inQueue(param)}
          ORDER BY position LIMIT 1
            FOR UPDATE SKIP LOCKED)
      RETURNING message`),
    takeAll: compileQuery<Queue, { message: QueuedMessage }>(c.db, (param) => sql`
      WITH taken AS (
        DELETE FROM ${c.table('task_messages')} WHERE ${inQueue(param)}
        RETURNING position, message)
      SELECT message FROM taken ORDER BY position`),
  };
}

interface Waiter {
  taskId: string;
  sessionId: string | undefined;
  wake(): void;
}

export class PostgresTaskMessageQueue implements TaskMessageQueue {
  private readonly connection: PostgresConnection;
  private readonly channel: string;
  private readonly statements: ReturnType<typeof queueStatements>;
  private readonly listener: NotificationListener | null;
  private readonly waiters = new Set<Waiter>();
  /** Queues that a dequeue found empty in this turn of the event loop (see dequeueAll). */
  private readonly foundEmpty = new Set<string>();
  private pollTimer: NodeJS.Timeout | null = null;

  /** Options are validated up front: a bad one throws `invalid_input` naming it. */
  constructor(options: PostgresTaskMessageQueueOptions) {
    const parsed = parseOptions(messageQueueOptionsSchema, options);
    this.connection = new PostgresConnection(parsed, 4);
    this.channel = notificationChannel(this.connection.schema);
    this.statements = queueStatements(this.connection, this.channel);
    this.listener = listenerFor(parsed.listen, this.connection.pool, this.channel);
    this.listener?.onNotification((payload) => {
      if (!payload.startsWith(NOTIFY_PREFIX)) return;
      const taskId = payload.slice(NOTIFY_PREFIX.length);
      for (const waiter of this.waiters) if (waiter.taskId === taskId) waiter.wake();
    });
    // Messages queued while the listener was away are found by looking.
    this.listener?.onStateChange(({ state }) => {
      if (state === 'listening') void this.lookForMessages();
      this.updatePolling();
    });
    this.listener?.start();
  }

  /** Whether the listener is connected: until then `waitForMessage` falls back to a 1 s poll. */
  get listening(): boolean {
    return this.listener?.isListening ?? false;
  }

  /**
   * Appends `message` to the queue of `taskId` for `sessionId`. With `maxSize`, the size check and
   * the append are one step under a lock per queue, so concurrent producers never overfill it.
   * Throws for an unknown or expired task.
   */
  async enqueue(taskId: string, message: QueuedMessage, sessionId?: string, maxSize?: number): Promise<void> {
    const parsed = parse(queuedMessageSchema, message, 'message');
    const session = parse(sessionSchema, sessionId, 'sessionId');
    const limit = parse(maxSizeSchema, maxSize, 'maxSize');
    const queue = { taskId, sessionId: session ?? null };
    const json = serialized(parsed);
    const c = this.connection;
    const append = async (db: Transaction<unknown> | typeof c.db) => {
      const { rows } = await this.statements.append.execute(db, { ...queue, json });
      if (rows.length === 0) throw unknownTask(taskId);
    };
    await c.run(async () => {
      if (limit === undefined) return append(c.db);
      await c.db.transaction().execute(async (trx) => {
        const lockKey = `${c.schema} messages ${queueKey(taskId, session)}`;
        await sql`SELECT pg_advisory_xact_lock(hashtextextended(${lockKey}, 0))`.execute(trx);
        const { rows } = await this.statements.size.execute(trx, queue);
        const size = rows[0]!.size;
        if (size >= limit) {
          throw new TaskStoreError(
            'retention_limit_exceeded',
            `Task message queue overflow: queue size (${size}) exceeds maximum (${limit})`,
          );
        }
        await append(trx);
      });
    });
  }

  /** Removes and returns the oldest message for the task and session, if any. */
  async dequeue(taskId: string, sessionId?: string): Promise<QueuedMessage | undefined> {
    const session = parse(sessionSchema, sessionId, 'sessionId');
    const c = this.connection;
    const { rows } = await c.run(() => this.statements.takeOldest.execute(c.db, { taskId, sessionId: session ?? null }));
    const message = rows[0]?.message;
    if (message === undefined) this.rememberEmpty(queueKey(taskId, session));
    return message;
  }

  /**
   * Removes and returns every message for the task and session, oldest first. The SDK clears a
   * queue in the same turn of the event loop as the dequeue that found it empty (tasks/result): that
   * answer stands, as if the clear had run with the dequeue, and costs no statement.
   */
  async dequeueAll(taskId: string, sessionId?: string): Promise<QueuedMessage[]> {
    const session = parse(sessionSchema, sessionId, 'sessionId');
    if (this.foundEmpty.delete(queueKey(taskId, session))) return [];
    const c = this.connection;
    const { rows } = await c.run(() => this.statements.takeAll.execute(c.db, { taskId, sessionId: session ?? null }));
    return rows.map((row) => row.message);
  }

  /**
   * Resolves once a message is queued for the task (on any instance), at once if one already is.
   * A wake is a hint: the caller dequeues, and may find the message taken by someone else.
   * Rejects with the signal's reason when aborted.
   */
  waitForMessage(taskId: string, sessionId: string | undefined, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise<void>((resolve, reject) => {
      const stop = () => {
        this.waiters.delete(waiter);
        signal?.removeEventListener('abort', onAbort);
        this.updatePolling();
      };
      const waiter: Waiter = { taskId, sessionId, wake: () => (stop(), resolve()) };
      const onAbort = () => (stop(), reject(signal!.reason));
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiters.add(waiter);
      this.updatePolling();
      // Registered first, looked second: a message committed after the look is announced.
      void this.lookForMessages([waiter]);
    });
  }

  /** Stops the listener, ends the pool if the queue created it; pending waits resolve. */
  async close(): Promise<void> {
    for (const waiter of [...this.waiters]) waiter.wake();
    await this.listener?.close();
    await this.connection.close();
  }

  private rememberEmpty(key: string): void {
    if (this.foundEmpty.size === 0) setImmediate(() => this.foundEmpty.clear());
    this.foundEmpty.add(key);
  }

  /** Wakes the waiters (all of them by default) whose queue is not empty. */
  private async lookForMessages(waiters = [...this.waiters]): Promise<void> {
    if (waiters.length === 0) return;
    const c = this.connection;
    try {
      const { rows } = await c.run(() =>
        sql<{ task_id: string; session_id: string | null }>`
          SELECT DISTINCT task_id, session_id FROM ${c.table('task_messages')}
           WHERE task_id = ANY(${[...new Set(waiters.map((w) => w.taskId))]}::text[])`.execute(c.db),
      );
      const queued = new Set(rows.map((row) => queueKey(row.task_id, row.session_id ?? undefined)));
      for (const waiter of waiters) if (queued.has(queueKey(waiter.taskId, waiter.sessionId))) waiter.wake();
    } catch {
      // The next notification, reconnect or poll looks again; a waiter is never failed by a look.
    }
  }

  private updatePolling(): void {
    const needed = this.waiters.size > 0 && !this.listening;
    if (needed && !this.pollTimer) {
      this.pollTimer = setInterval(() => void this.lookForMessages(), BACKSTOP_POLL_MS).unref();
    } else if (!needed && this.pollTimer) {
      clearInterval(this.pollTimer);
      this.pollTimer = null;
    }
  }
}

function queueKey(taskId: string, sessionId: string | undefined): string {
  return JSON.stringify([taskId, sessionId ?? null]);
}

/**
 * The message as JSON text, before any statement: a message is the SDK's, with `undefined`s JSON
 * drops, so it is not held to the stores' plain-JSON rules, but a caller's getter or `toJSON` that
 * throws is still the caller's `invalid_input`, never a database error.
 */
function serialized(message: unknown): string {
  try {
    return JSON.stringify(message);
  } catch (error) {
    throw invalidInput('message', readingThrew(error), error);
  }
}

function unknownTask(taskId: string): TaskStoreError {
  return new TaskStoreError('invalid_input', `Task with ID ${taskId} not found`);
}
