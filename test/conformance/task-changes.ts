/**
 * The optional TaskChangeFeed capability: a store that offers `watchTasks` reports, by id, at
 * least every change a notification must carry (input_required, terminal, a cancellation request,
 * a TTL change, removal) of the tasks watched, and nothing once the watch is closed.
 * Reports are hints, so each check waits for the id to arrive rather than counting calls.
 */
import { describe, expect, it } from 'vitest';
import { hasTaskChangeFeed, type TaskChangeFeed } from '../../src/contract/task-changes.js';
import type { TaskStore } from '../../src/index.js';
import {
  ask,
  createTask,
  eventually,
  resultText,
  sampleError,
  sleep,
  unknownId,
  useStores,
  type ConformanceTarget,
} from './harness.js';

/** Watches `taskIds` and records every id reported. */
async function record(store: TaskStore & TaskChangeFeed, taskIds: string[]) {
  const reported: string[] = [];
  const reportedAt: number[] = [];
  const watch = await store.watchTasks(taskIds, (taskId) => {
    reported.push(taskId);
    reportedAt.push(Date.now());
  });
  return {
    reported,
    watch,
    /** Waits until `taskId` has been reported since the last `reset()`. */
    heard: (taskId: string, what: string) => eventually(what, async () => reported.includes(taskId)),
    /** Waits until `taskId` is reported at `atMs` (this clock) or later: reports are hints, one may come early. */
    heardFrom: (taskId: string, atMs: number, what: string) =>
      eventually(what, async () => reported.some((id, i) => id === taskId && reportedAt[i]! >= atMs)),
    reset: () => {
      reported.splice(0);
      reportedAt.splice(0);
    },
  };
}

export function taskChangeConformance(target: ConformanceTarget): void {
  describe('task change feed', () => {
    const open = useStores(target);
    const openFeed = async () => {
      const store = await open();
      if (!hasTaskChangeFeed(store)) throw new Error(`${target.name} claims the change feed but has no watchTasks`);
      return store;
    };

    it('reports a task asking for input, then settling', async () => {
      const store = await openFeed();
      const { id } = await createTask(store);
      const changes = await record(store, [id]);
      await store.requireInput(id, ask('approval'));
      await changes.heard(id, 'the input_required report');
      changes.reset();
      await store.completeTask(id, resultText('done'));
      await changes.heard(id, 'the completion report');
      changes.watch.close();
    });

    it('reports failure and cancellation, including a cancel of a finished task', async () => {
      const store = await openFeed();
      const failing = await createTask(store);
      const cancelled = await createTask(store);
      const finished = await createTask(store);
      await store.completeTask(finished.id, resultText('done'));
      const changes = await record(store, [failing.id, cancelled.id, finished.id]);
      await store.failTask(failing.id, sampleError());
      await store.cancelTask(cancelled.id, 'stop');
      await store.cancelTask(finished.id);
      await changes.heard(failing.id, 'the failure report');
      await changes.heard(cancelled.id, 'the cancellation report');
      await changes.heard(finished.id, 'the report of a cancel on a finished task');
      changes.watch.close();
    });

    it('reports a TTL change, a TTL shortened into the past, and removal', async () => {
      const store = await openFeed();
      const retimed = await createTask(store);
      const expired = await createTask(store);
      const discarded = await createTask(store);
      const changes = await record(store, [retimed.id, expired.id, discarded.id]);
      await store.setTtl(retimed.id, 120_000);
      await changes.heard(retimed.id, 'the TTL change report');
      await store.setTtl(expired.id, 0);
      await changes.heard(expired.id, 'the report of a TTL that expired the task');
      await store.discardTask(discarded.id);
      await changes.heard(discarded.id, 'the removal report');
      changes.watch.close();
    });

    it('reports the moment a TTL elapses, also one a TTL change brought forward', async () => {
      const store = await openFeed();
      const expiring = await createTask(store, { ttlMs: 1500 });
      const changes = await record(store, [expiring.id]);
      const expiresAt = Date.parse((await store.getTask(expiring.id))!.createdAt) + 1500;
      await changes.heardFrom(expiring.id, expiresAt, 'the report of the TTL elapsing');
      expect(await store.getTask(expiring.id)).toBeNull();

      const retimed = await createTask(store);
      const later = await record(store, [retimed.id]);
      const { createdAt } = (await store.getTask(retimed.id))!;
      const ttlMs = Date.now() - Date.parse(createdAt) + 600; // a TTL counts from creation
      await store.setTtl(retimed.id, ttlMs);
      await later.heard(retimed.id, 'the TTL change report');
      await later.heardFrom(retimed.id, Date.parse(createdAt) + ttlMs, 'the report of the shortened TTL elapsing');
      expect(await store.getTask(retimed.id)).toBeNull();
      changes.watch.close();
      later.watch.close();
    });

    it('reports only watched tasks, and nothing after close', async () => {
      const store = await openFeed();
      const watched = await createTask(store);
      const other = await createTask(store);
      const changes = await record(store, [watched.id, unknownId()]);
      await store.cancelTask(other.id);
      await store.cancelTask(watched.id);
      await changes.heard(watched.id, 'the watched task\'s report');
      expect(changes.reported).not.toContain(other.id);

      const later = await createTask(store);
      const closing = await record(store, [later.id]);
      closing.watch.close();
      closing.watch.close();
      // What came before the close (news of the creation, late on a loaded machine) may stay.
      const beforeClose = [...closing.reported];
      await store.failTask(later.id, sampleError());
      // A report would arrive within a round trip; give it several before concluding there is none.
      await sleep(200);
      expect(closing.reported).toEqual(beforeClose);
      changes.watch.close();
    });

    it('a watcher whose callback throws keeps the news from no one, itself included', async () => {
      const store = await openFeed();
      const { id } = await createTask(store);
      const throwing: string[] = [];
      const failing = await store.watchTasks([id], (taskId) => {
        throwing.push(taskId);
        throw new Error('a watcher that breaks');
      });
      const other = await record(store, [id]);
      await store.requireInput(id, ask('k'));
      await other.heard(id, 'the report to the watcher beside the one that threw');
      await eventually('the report to the one that threw', async () => throwing.includes(id));
      throwing.splice(0);
      other.reset();
      await store.completeTask(id, resultText('done'));
      await other.heard(id, 'the next report to the other watcher');
      await eventually('the next report to the one that threw', async () => throwing.includes(id));
      failing.close();
      other.watch.close();
    });

    it('serves several watchers of one task, each told once it is closed by the others', async () => {
      const store = await openFeed();
      const { id } = await createTask(store);
      const first = await record(store, [id]);
      const second = await record(store, [id]);
      first.watch.close();
      // Reports are hints: one may have reached `first` before it closed (its listener coming up
      // reports every watched task). What counts is that none reaches it after.
      first.reset();
      await store.requireInput(id, ask('k'));
      await second.heard(id, 'the report to the remaining watcher');
      await sleep(100);
      expect(first.reported).toEqual([]);
      second.watch.close();
    });

    it('keeps apart two watches that share one callback: closing one, even twice, leaves the other', async () => {
      const store = await openFeed();
      const { id } = await createTask(store);
      const reported: string[] = [];
      const onChange = (taskId: string) => reported.push(taskId);
      const closed = await store.watchTasks([id], onChange);
      const kept = await store.watchTasks([id], onChange);
      closed.close();
      closed.close();
      reported.splice(0);
      await store.requireInput(id, ask('k'));
      await eventually('the report to the watch left open', async () => reported.includes(id));
      kept.close();
    });
  });
}
