/**
 * listTasks: status and owner filters, keyset pagination (limit, opaque cursor, stable order, no
 * duplicates or misses while tasks come and go), and expired tasks never listed.
 */
import { describe, expect, it } from 'vitest';
import type { TaskObject, TaskOwner, TaskStatus, TaskStore } from '../../src/index.js';
import {
  createTask,
  expectWellFormed,
  finish,
  listAllIds,
  mustGet,
  sleep,
  useStores,
  type ConformanceTarget,
} from './harness.js';

/** Walks every page at `limit`, returning the pages' ids in order. */
async function pages(
  store: TaskStore,
  limit: number,
  options: { status?: TaskStatus; owner?: TaskOwner } = {},
  between?: (page: number, listed: string[]) => Promise<void>,
): Promise<string[][]> {
  const result: string[][] = [];
  let cursor: string | undefined;
  for (;;) {
    const page = await store.listTasks({ ...options, limit, ...(cursor === undefined ? {} : { cursor }) });
    expect(page.tasks.length).toBeLessThanOrEqual(limit);
    page.tasks.forEach(expectWellFormed);
    result.push(page.tasks.map((task) => task.taskId));
    if (page.nextCursor === null) return result;
    expect(typeof page.nextCursor).toBe('string');
    if (result.length > 1_000) throw new Error('pagination never ended');
    cursor = page.nextCursor;
    await between?.(result.length, result[result.length - 1]!);
  }
}

function expectNoDuplicates(ids: string[]): void {
  expect(new Set(ids).size, `duplicates in ${ids.join(', ')}`).toBe(ids.length);
}

export function listingConformance(target: ConformanceTarget): void {
  describe('listing', () => {
    const open = useStores(target);

    it('an empty store lists nothing', async () => {
      const store = await open();
      expect(await store.listTasks()).toStrictEqual({ tasks: [], nextCursor: null });
    });

    it('lists live tasks in every status and honours the status filter', async () => {
      const store = await open();
      const { id: working } = await createTask(store);
      const { id: parked } = await createTask(store);
      await store.requireInput(parked, { k: { method: 'roots/list' } });
      const byStatus: Record<TaskStatus, string> = {
        working,
        input_required: parked,
        completed: (await createTask(store)).id,
        failed: (await createTask(store)).id,
        cancelled: (await createTask(store)).id,
      };
      await finish(store, byStatus.completed, 'complete');
      await finish(store, byStatus.failed, 'fail');
      await finish(store, byStatus.cancelled, 'cancel');

      const all = await store.listTasks();
      expect(all.nextCursor).toBeNull();
      expect(all.tasks.map((t) => t.taskId).sort()).toStrictEqual(Object.values(byStatus).sort());
      for (const task of all.tasks) expect(task).toStrictEqual(await mustGet(store, task.taskId));

      for (const [status, id] of Object.entries(byStatus) as [TaskStatus, string][]) {
        const listed = await store.listTasks({ status });
        expect(listed.tasks.map((t) => t.taskId), status).toStrictEqual([id]);
        expect(listed.tasks.every((t: TaskObject) => t.status === status)).toBe(true);
      }
    });

    it('the owner filter: undefined lists every owner, null only unowned tasks, "" only tasks owned by ""', async () => {
      const store = await open();
      const ids: Record<string, string[]> = { null: [], '': [], alice: [], bob: [] };
      const owners: TaskOwner[] = [null, '', 'alice', 'bob', null, 'alice'];
      for (const owner of owners) ids[String(owner)]!.push((await createTask(store, { owner })).id);
      await finish(store, ids.alice![0]!, 'complete');

      const sorted = (list: string[]) => [...list].sort();
      expect(sorted(await listAllIds(store))).toStrictEqual(sorted(Object.values(ids).flat()));
      expect(sorted(await listAllIds(store, { owner: undefined }))).toStrictEqual(sorted(Object.values(ids).flat()));
      expect(sorted(await listAllIds(store, { owner: null }))).toStrictEqual(sorted(ids.null!));
      expect(sorted(await listAllIds(store, { owner: '' }))).toStrictEqual(sorted(ids['']!));
      expect(sorted(await listAllIds(store, { owner: 'alice' }))).toStrictEqual(sorted(ids.alice!));
      expect(await listAllIds(store, { owner: 'carol' })).toStrictEqual([]);
      expect(await listAllIds(store, { owner: 'alice', status: 'completed' })).toStrictEqual([ids.alice![0]]);
      expect(await listAllIds(store, { owner: 'alice', status: 'working' })).toStrictEqual([ids.alice![1]]);
      expect(await listAllIds(store, { owner: null, status: 'completed' })).toStrictEqual([]);
    });

    it('pages of at most `limit` tasks cover every task once, in one stable order', async () => {
      const store = await open();
      const created: string[] = [];
      for (let i = 0; i < 7; i++) created.push((await createTask(store)).id);

      const walked = await pages(store, 3);
      expect(walked.slice(0, 3).map((page) => page.length)).toStrictEqual([3, 3, 1]);
      // A store may end on the last full page or with one empty page after it.
      expect(walked.length).toBeLessThanOrEqual(4);
      const ids = walked.flat();
      expectNoDuplicates(ids);
      expect([...ids].sort()).toStrictEqual([...created].sort());

      // The same order every time, and the same order as one big page.
      expect((await pages(store, 3)).flat()).toStrictEqual(ids);
      expect((await pages(store, 1)).flat()).toStrictEqual(ids);
      expect((await store.listTasks({ limit: 1_000 })).tasks.map((t) => t.taskId)).toStrictEqual(ids);
    });

    it('lists tasks oldest first, by creation time rather than by id', async () => {
      const store = await open();
      const created: string[] = [];
      for (let i = 0; i < 8; i++) {
        created.push((await createTask(store)).id);
        // Each in a millisecond of its own: the order within one millisecond is the ids'.
        await sleep(2);
      }
      expect((await pages(store, 3)).flat()).toStrictEqual(created);
      const listed = (await store.listTasks()).tasks;
      expect(listed.map((task) => task.taskId)).toStrictEqual(created);
      const times = listed.map((task) => Date.parse(task.createdAt));
      expect([...times].sort((a, b) => a - b)).toStrictEqual(times);
    });

    it('a page exactly filled by the last tasks has no next cursor', async () => {
      const store = await open();
      const created: string[] = [];
      for (let i = 0; i < 4; i++) created.push((await createTask(store)).id);
      const walked = await pages(store, 2);
      expect(walked.flat().sort()).toStrictEqual([...created].sort());
      expect(walked.map((page) => page.length)).toStrictEqual([2, 2]);
      expect((await store.listTasks({ limit: 4 })).nextCursor).toBeNull();
    });

    it('the default page holds 100 tasks, and limit goes up to 1000', async () => {
      const store = await open();
      const created = new Set<string>();
      for (let i = 0; i < 105; i++) created.add((await createTask(store)).id);
      const first = await store.listTasks();
      expect(first.tasks).toHaveLength(100);
      expect(first.nextCursor).not.toBeNull();
      const second = await store.listTasks({ cursor: first.nextCursor! });
      expect(second.tasks).toHaveLength(5);
      expect(second.nextCursor).toBeNull();
      const ids = [...first.tasks, ...second.tasks].map((t) => t.taskId);
      expectNoDuplicates(ids);
      expect(new Set(ids)).toStrictEqual(created);

      const whole = await store.listTasks({ limit: 1_000 });
      expect(whole.tasks.map((t) => t.taskId)).toStrictEqual(ids);
      expect(whole.nextCursor).toBeNull();
    });

    it('a cursor neither repeats nor skips a task while tasks are created, finished and removed between pages', async () => {
      const store = await open();
      const original: string[] = [];
      for (let i = 0; i < 10; i++) original.push((await createTask(store)).id);
      const added: string[] = [];
      const removed = new Set<string>();

      const walked = await pages(store, 3, {}, async (page) => {
        if (page <= 4) added.push((await createTask(store)).id, (await createTask(store)).id);
        // Change tasks on every page: a cursor must not depend on anything a transition changes.
        const finishing = original[page * 2 - 2];
        if (finishing !== undefined && finishing !== original[9]) await finish(store, finishing, 'complete');
        const touched = original[page * 2 - 1];
        if (touched !== undefined && touched !== original[9]) await store.setTaskMeta(touched, { page });
        if (page === 2) {
          const victim = original[9]!;
          await store.discardTask(victim);
          removed.add(victim);
        }
      });
      const ids = walked.flat();
      expectNoDuplicates(ids);
      for (const id of original) {
        if (!removed.has(id)) expect(ids, `task ${id} was skipped`).toContain(id);
      }
      for (const id of ids) expect([...original, ...added]).toContain(id);
    });

    it('a cursor stays valid after the task it was taken at is removed', async () => {
      const store = await open();
      for (let i = 0; i < 5; i++) await createTask(store);
      const order = (await store.listTasks({ limit: 1_000 })).tasks.map((t) => t.taskId);
      const first = await store.listTasks({ limit: 2 });
      expect(first.tasks.map((t) => t.taskId)).toStrictEqual(order.slice(0, 2));
      expect(await store.discardTask(order[1]!)).toBe(true);
      const rest = await store.listTasks({ limit: 10, cursor: first.nextCursor! });
      expect(rest.tasks.map((t) => t.taskId)).toStrictEqual(order.slice(2));
      expect(rest.nextCursor).toBeNull();
    });

    it('a status filter pages as well, and a task that leaves the filter between pages is not repeated', async () => {
      const store = await open();
      const working: string[] = [];
      for (let i = 0; i < 6; i++) {
        const { id } = await createTask(store);
        if (i % 3 === 2) await finish(store, id, 'complete');
        else working.push(id);
      }
      const walked = await pages(store, 2, { status: 'working' });
      expect(walked.flat().sort()).toStrictEqual([...working].sort());

      // Each page's tasks are finished as soon as they are listed, so they leave the filter: a
      // cursor that counted positions instead of remembering a key would now skip tasks.
      const finishing = await pages(store, 2, { status: 'working' }, async (_page, listed) => {
        for (const id of listed) await finish(store, id, 'complete');
      });
      expect(finishing.flat().sort()).toStrictEqual([...working].sort());
    });

    it('never lists an expired task, with or without filters and pages', async () => {
      const store = await open();
      const live: string[] = [];
      for (let i = 0; i < 6; i++) {
        live.push((await createTask(store, { owner: 'alice' })).id);
        await createTask(store, { owner: 'alice', ttlMs: 0 });
      }
      const shortened = live.pop()!;
      await store.setTtl(shortened, 0);
      const finished = live[0]!;
      await finish(store, finished, 'complete');
      const lapsedFinished = (await createTask(store, { owner: 'alice' })).id;
      await finish(store, lapsedFinished, 'complete');
      await store.setTtl(lapsedFinished, 0);

      expect((await pages(store, 2)).flat().sort()).toStrictEqual([...live].sort());
      expect((await listAllIds(store, { owner: 'alice' })).sort()).toStrictEqual([...live].sort());
      expect(await listAllIds(store, { status: 'completed' })).toStrictEqual([finished]);
      expect((await listAllIds(store, { status: 'working' })).sort()).toStrictEqual(live.slice(1).sort());
    });
  });
}
