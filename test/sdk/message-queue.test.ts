/**
 * PostgresTaskMessageQueue. The first part is the SDK's own InMemoryTaskMessageQueue tests
 * (typescript-sdk test/experimental/tasks/stores/in-memory.test.ts), case by case, on real tasks
 * (a queue belongs to a task here); the rest is what a durable queue adds: sessions kept apart,
 * instances sharing queues, an atomic size limit, removal with the task, and waking a waiter.
 */
import type { QueuedMessage } from '@modelcontextprotocol/sdk/experimental/tasks/interfaces.js';
import { describe, expect, it } from 'vitest';
import { TaskStoreError } from '../../src/index.js';
import { PostgresTaskMessageQueue, type PostgresTaskMessageQueueOptions } from '../../src/sdk/index.js';
import { countCheckouts } from '../support/pool-checkouts.js';
import { usePostgresStores } from '../support/postgres-stores.js';
import { stillPending, within } from '../support/time.js';

const stores = usePostgresStores();

// One schema for the file: every test works on tasks of its own.
let sharedSchema: Promise<string> | undefined;

async function setup(options: Omit<PostgresTaskMessageQueueOptions, 'pool' | 'schema'> = {}) {
  const schema = await (sharedSchema ??= stores.schema());
  const store = stores.open(schema);
  const queues: PostgresTaskMessageQueue[] = [];
  const queue = () => {
    const opened = new PostgresTaskMessageQueue({ ...options, pool: stores.pool(), schema });
    queues.push(opened);
    return opened;
  };
  const task = async () => (await store.createTask({ toolName: 'queue-test' })).taskId;
  const close = () => Promise.all(queues.map((q) => q.close()));
  return { schema, store, queue, task, close };
}

const request = (id: number, method = 'tools/call', timestamp = Date.now()): QueuedMessage => ({
  type: 'request',
  message: { jsonrpc: '2.0', id, method, params: {} },
  timestamp,
});
const notification = (timestamp = Date.now()): QueuedMessage => ({
  type: 'notification',
  message: { jsonrpc: '2.0', method: 'notifications/progress', params: { progress: 50, total: 100 } },
  timestamp,
});
const response = (id: number, timestamp = Date.now()): QueuedMessage => ({
  type: 'response',
  message: { jsonrpc: '2.0', id, result: { content: [{ type: 'text', text: 'Success' }] } },
  timestamp,
});

describe('InMemoryTaskMessageQueue counterparts', () => {
  it.each([
    ['request', request(1)],
    ['notification', notification()],
    ['response', response(42)],
    ['error response', { type: 'error', message: { jsonrpc: '2.0', id: 1, error: { code: -32600, message: 'Invalid Request' } }, timestamp: 1 }],
  ] as [string, QueuedMessage][])('enqueues and dequeues a %s message', async (_kind, message) => {
    const { queue, task, close } = await setup();
    const q = queue();
    const taskId = await task();
    await q.enqueue(taskId, message);
    expect(await q.dequeue(taskId)).toEqual(message);
    await close();
  });

  it('dequeues undefined from an empty queue', async () => {
    const { queue, task, close } = await setup();
    expect(await queue().dequeue(await task())).toBeUndefined();
    await close();
  });

  it('keeps FIFO order across message types', async () => {
    const { queue, task, close } = await setup();
    const q = queue();
    const taskId = await task();
    const messages = [request(1, 'tools/call', 1000), notification(2000), response(1, 3000)];
    for (const message of messages) await q.enqueue(taskId, message);
    for (const message of messages) expect(await q.dequeue(taskId)).toEqual(message);
    expect(await q.dequeue(taskId)).toBeUndefined();
    await close();
  });

  it('dequeueAll returns every message, responses included, in order, and empties the queue', async () => {
    const { queue, task, close } = await setup();
    const q = queue();
    const taskId = await task();
    const messages = [request(1, 'tools/call', 1000), response(1, 2000), notification(3000)];
    for (const message of messages) await q.enqueue(taskId, message);
    expect(await q.dequeueAll(taskId)).toEqual(messages);
    expect(await q.dequeue(taskId)).toBeUndefined();
    await close();
  });

  it('dequeueAll of a task with nothing queued (or no task at all) is empty', async () => {
    const { queue, task, close } = await setup();
    expect(await queue().dequeueAll(await task())).toEqual([]);
    expect(await queue().dequeueAll('non-existent')).toEqual([]);
    await close();
  });

  it('refuses a message beyond maxSize, and accepts one below it', async () => {
    const { queue, task, close } = await setup();
    const q = queue();
    const taskId = await task();
    await q.enqueue(taskId, request(1), undefined, 2);
    await q.enqueue(taskId, request(2), undefined, 2);
    const refused = await q.enqueue(taskId, request(3), undefined, 2).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(TaskStoreError);
    expect(refused).toMatchObject({ kind: 'retention_limit_exceeded', message: expect.stringContaining('Task message queue overflow') });
    expect(await q.dequeueAll(taskId)).toEqual([request(1, 'tools/call', expect.any(Number)), request(2, 'tools/call', expect.any(Number))]);
    await expect(q.enqueue(await task(), response(1), undefined, 5)).resolves.toBeUndefined();
    await close();
  });

  it('keeps the messages of different tasks apart', async () => {
    const { queue, task, close } = await setup();
    const q = queue();
    const [a, b] = [await task(), await task()];
    await q.enqueue(a, request(1, 'test1', 1000));
    await q.enqueue(b, response(2, 2000));
    expect(await q.dequeue(a)).toEqual(request(1, 'test1', 1000));
    expect(await q.dequeue(b)).toEqual(response(2, 2000));
    expect(await q.dequeue(a)).toBeUndefined();
    expect(await q.dequeue(b)).toBeUndefined();
    await close();
  });
});

describe('durable, per task and session', () => {
  it("one session never dequeues another's messages; no session is a queue of its own", async () => {
    const { queue, task, close } = await setup();
    const q = queue();
    const taskId = await task();
    await q.enqueue(taskId, request(1), 'session-a');
    await q.enqueue(taskId, request(2), undefined);
    expect(await q.dequeue(taskId, 'session-b')).toBeUndefined();
    expect(await q.dequeueAll(taskId, 'session-b')).toEqual([]);
    expect((await q.dequeue(taskId, 'session-a'))?.message).toMatchObject({ id: 1 });
    expect((await q.dequeue(taskId))?.message).toMatchObject({ id: 2 });
    await close();
  });

  it('clearing a queue in the same turn as a dequeue that found it empty costs no statement; a later clear looks', async () => {
    const schema = await (sharedSchema ??= stores.schema());
    const store = stores.open(schema);
    const pool = stores.pool();
    const q = new PostgresTaskMessageQueue({ pool, schema });
    const { taskId } = await store.createTask({ toolName: 'queue-test' });
    const statements = countCheckouts(pool);
    // As the SDK's tasks/result does: drain, then clear once the task is terminal.
    expect(await q.dequeue(taskId, 's')).toBeUndefined();
    expect(await q.dequeueAll(taskId, 's')).toEqual([]);
    expect(statements()).toBe(1);
    // Once, for that queue only: a second clear looks, as does another session's.
    expect(await q.dequeueAll(taskId, 's')).toEqual([]);
    expect(await q.dequeue(taskId, 's')).toBeUndefined();
    expect(await q.dequeueAll(taskId, 'other')).toEqual([]);
    expect(statements()).toBe(4);
    // A clear in a later turn looks, and finds what was queued meanwhile.
    expect(await q.dequeue(taskId)).toBeUndefined();
    await new Promise((resolve) => setImmediate(resolve));
    await q.enqueue(taskId, request(2));
    expect(await q.dequeueAll(taskId)).toHaveLength(1);
    await q.close();
  });

  it('a message queued on one instance is dequeued on another', async () => {
    const { queue, task, close } = await setup();
    const taskId = await task();
    await queue().enqueue(taskId, request(7), 's');
    expect((await queue().dequeue(taskId, 's'))?.message).toMatchObject({ id: 7 });
    await close();
  });

  it('concurrent producers never overfill a queue', async () => {
    const { queue, task, close } = await setup();
    const [a, b] = [queue(), queue()];
    const taskId = await task();
    const attempts = await Promise.allSettled(Array.from({ length: 20 }, (_, i) => (i % 2 ? a : b).enqueue(taskId, request(i), 's', 5)));
    expect(attempts.filter((attempt) => attempt.status === 'fulfilled')).toHaveLength(5);
    expect(await a.dequeueAll(taskId, 's')).toHaveLength(5);
    await close();
  });

  it('concurrent consumers each take a different message', async () => {
    const { queue, task, close } = await setup();
    const [a, b] = [queue(), queue()];
    const taskId = await task();
    for (let i = 0; i < 10; i++) await a.enqueue(taskId, request(i), 's');
    const taken = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? a : b).dequeue(taskId, 's')));
    expect(new Set(taken.map((m) => (m!.message as { id: number }).id)).size).toBe(10);
    await close();
  });

  it('refuses messages for an unknown or expired task', async () => {
    const { store, queue, task, close } = await setup();
    const q = queue();
    await expect(q.enqueue('0'.repeat(32), request(1))).rejects.toThrow('not found');
    const taskId = await task();
    await store.setTtl(taskId, 0);
    await expect(q.enqueue(taskId, request(1))).rejects.toThrow('not found');
    await close();
  });

  it('messages go with their task when it is discarded', async () => {
    const { store, queue, task, close } = await setup();
    const q = queue();
    const taskId = await task();
    await q.enqueue(taskId, request(1), 's');
    expect(await store.discardTask(taskId)).toBe(true);
    expect(await q.dequeueAll(taskId, 's')).toEqual([]);
    await close();
  });

  it('messages go with their task when the reaper tombstones it', async () => {
    const { schema, store, queue, task, close } = await setup();
    const q = queue();
    const taskId = await task();
    await q.enqueue(taskId, request(1), 's');
    await store.setTtl(taskId, 0);
    expect((await store.reapExpired()).tombstoned).toBeGreaterThanOrEqual(1);
    const { rows } = await stores.pool().query(`SELECT count(*)::int AS n FROM ${schema}.task_messages WHERE task_id = $1`, [taskId]);
    expect(rows[0].n).toBe(0);
    await close();
  });
});

describe('waitForMessage', () => {
  it('wakes when another instance queues a message for the task', async () => {
    const { queue, task, close } = await setup();
    const [waiter, producer] = [queue(), queue()];
    await within('the listener connecting', untilListening(waiter));
    const taskId = await task();
    const waiting = waiter.waitForMessage(taskId, 's');
    expect(await stillPending(waiting, 50)).toBe(true);
    await producer.enqueue(taskId, request(1), 's');
    await within('the waiter waking', waiting);
    await close();
  });

  it('resolves at once when a message is already queued', async () => {
    const { queue, task, close } = await setup();
    const q = queue();
    const taskId = await task();
    await q.enqueue(taskId, request(1), 's');
    await within('the waiter finding the message', q.waitForMessage(taskId, 's'));
    await close();
  });

  it('rejects with the reason when aborted', async () => {
    const { queue, task, close } = await setup();
    const q = queue();
    const controller = new AbortController();
    const waiting = q.waitForMessage(await task(), 's', controller.signal);
    controller.abort(new Error('gave up'));
    await expect(waiting).rejects.toThrow('gave up');
    await close();
  });

  it('without LISTEN, a poll still finds the message', async () => {
    const { queue, task, close } = await setup({ listen: false });
    const [waiter, producer] = [queue(), queue()];
    const taskId = await task();
    const waiting = waiter.waitForMessage(taskId, undefined);
    await producer.enqueue(taskId, request(1));
    await within('the poll finding the message', waiting);
    await close();
  });
});

function untilListening(queue: PostgresTaskMessageQueue): Promise<void> {
  return new Promise((resolve) => {
    const check = () => (queue.listening ? resolve() : setTimeout(check, 5));
    check();
  });
}
