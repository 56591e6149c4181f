/**
 * Expiry, ttl updates, presence and cleanup passes. An expired task is indistinguishable from an
 * unknown one to every read and transition; only taskPresence may say "expired", and only while
 * the store still holds the record.
 */
import { describe, expect, it } from 'vitest';
import type { CancellationToken, TaskOwner, TaskStore } from '../../src/index.js';
import {
  LONG_TTL,
  SHORT_TTL,
  answers,
  ask,
  createTask,
  eventually,
  finish,
  listAllIds,
  mustGet,
  raised,
  resultText,
  sampleError,
  sleep,
  statusOf,
  useStores,
  within,
  type ConformanceTarget,
} from './harness.js';

/**
 * Every read and transition answers "no such task" for an expired one, nothing revives it, and
 * its token is raised. With `owner`, taskPresence must still report the held record as expired.
 */
export async function assertExpired(store: TaskStore, id: string, token: CancellationToken, owner?: TaskOwner): Promise<void> {
  await eventually('the task reading as absent', async () => (await store.getTask(id)) === null);
  const presence = await store.taskPresence(id);
  if (owner !== undefined) expect(presence).toStrictEqual({ state: 'expired', owner });
  else expect(presence.state).not.toBe('present');

  expect(await store.getTaskResult(id)).toBeNull();
  expect(await store.taskOwner(id)).toBeNull();
  expect(await store.outstandingInputRequests(id)).toBeNull();
  expect(await store.inputResponses(id)).toBeNull();
  expect(await store.resumeContext(id)).toBeNull();
  expect(await listAllIds(store)).not.toContain(id);
  expect(await within('waitForCompletion on an expired task', store.waitForCompletion(id))).toBeNull();

  expect(await store.completeTask(id, resultText('late')), 'completeTask').toBe(false);
  expect(await store.failTask(id, sampleError()), 'failTask').toBe(false);
  expect(await store.cancelTask(id), 'cancelTask').toBeNull();
  expect(await store.setTtl(id, LONG_TTL), 'setTtl').toBe(false);
  expect(await store.requireInput(id, ask('k')), 'requireInput').toBe(false);
  expect(await store.applyInputResponses(id, answers('k')), 'applyInputResponses').toBeNull();
  expect(await store.setStatus(id, 'working', 'revived?'), 'setStatus').toBe(false);
  expect(await store.setTaskMeta(id, { revived: true }), 'setTaskMeta').toBe(false);
  expect(await store.getTask(id), 'a write after expiry made the task readable again').toBeNull();
  expect((await store.taskPresence(id)).state).not.toBe('present');

  await raised(token, 'expiry raising the task\'s token');
  expect(token.isCancelled).toBe(true);
}

export function expiryConformance(target: ConformanceTarget): void {
  describe('expiry', () => {
    const open = useStores(target);

    it('a task whose ttl is shortened to 0, or created with a 1 ms ttl, expires; another task is untouched', async () => {
      const store = await open();
      const control = await createTask(store);
      const shortened = await createTask(store, { owner: 'alice' });
      expect(await store.setTtl(shortened.id, 0)).toBe(true);
      await assertExpired(store, shortened.id, shortened.token, 'alice');

      const brief = await createTask(store, { ttlMs: 1, arguments: {} });
      await assertExpired(store, brief.id, brief.token, null);

      expect(await statusOf(store, control.id)).toBe('working');
      expect(control.token.isCancelled).toBe(false);
    });

    it('ttlMs 0 expires at once: the task is never readable, but its record is held as expired', async () => {
      const store = await open();
      const { id, token } = await createTask(store, { ttlMs: 0, owner: '' });
      // The token comes back raised: nothing will ever run for this task.
      expect([token.isCancelled, token.signal.reason]).toStrictEqual([true, 'expired']);
      expect(await store.getTask(id)).toBeNull();
      expect(await store.taskPresence(id)).toStrictEqual({ state: 'expired', owner: '' });
      await assertExpired(store, id, token, '');
    });

    it('a ttl elapses with no calls at all: the token is raised at the deadline, the defaultTtlMs applies, and a longer ttl survives', async () => {
      // Long enough for the six setup calls to come in before the deadline on a loaded machine.
      const ttl = 1000;
      const store = await open({ defaultTtlMs: ttl });
      const byDefault = await store.createTask({ toolName: 'x' });
      const explicit = await createTask(store, { ttlMs: ttl, owner: 'alice' });
      const extended = await createTask(store, { ttlMs: ttl });
      const long = await createTask(store, { ttlMs: LONG_TTL });
      await finish(store, explicit.id, 'complete');
      expect(await store.setTtl(extended.id, LONG_TTL)).toBe(true);
      expect((await mustGet(store, byDefault.taskId)).ttlMs).toBe(ttl);
      expect(byDefault.token.isCancelled).toBe(false);

      // No reads until the tokens go up: the store must notice the deadline by itself.
      await Promise.all([raised(byDefault.token), raised(explicit.token)]);
      await assertExpired(store, byDefault.taskId, byDefault.token, null);
      await assertExpired(store, explicit.id, explicit.token, 'alice');

      for (const survivor of [long, extended]) {
        expect(survivor.token.isCancelled).toBe(false);
        expect(await statusOf(store, survivor.id)).toBe('working');
      }
      expect((await mustGet(store, extended.id)).ttlMs).toBe(LONG_TTL);
    });

    it('setTtl is measured from creation: shortening below the task\'s age expires it at once and raises its token', async () => {
      const store = await open();
      const aged = await createTask(store, { owner: 'alice' });
      const lapsed = await createTask(store, { ttlMs: SHORT_TTL });
      await sleep(SHORT_TTL + 60);

      expect(await store.setTtl(aged.id, SHORT_TTL)).toBe(true);
      expect(await store.getTask(aged.id), 'the task outlived a ttl shorter than its age').toBeNull();
      await assertExpired(store, aged.id, aged.token, 'alice');

      // An expired task cannot be given a longer ttl.
      expect(await store.setTtl(lapsed.id, LONG_TTL)).toBe(false);
      await assertExpired(store, lapsed.id, lapsed.token);
    });

    it('setTtl changes the reported ttl, and works on terminal tasks', async () => {
      const store = await open();
      const { id, token } = await createTask(store);
      expect(await store.setTtl(id, 120_000)).toBe(true);
      expect((await mustGet(store, id)).ttlMs).toBe(120_000);

      await finish(store, id, 'complete');
      expect(await statusOf(store, id)).toBe('completed');
      expect(await store.setTtl(id, 90_000)).toBe(true);
      const task = await mustGet(store, id);
      expect(task.ttlMs).toBe(90_000);
      expect(task.status).toBe('completed');
      expect(token.isCancelled).toBe(false);

      // Shortening a finished task into the past expires it and raises its token.
      expect(await store.setTtl(id, 0)).toBe(true);
      await assertExpired(store, id, token, null);
    });

    it('a ttl of null never expires, and survives a cleanup pass', async () => {
      const store = await open({ tombstoneRetentionMs: 0 });
      const forever = await createTask(store, { ttlMs: null, owner: 'alice' });
      const doomed = await createTask(store, { ttlMs: 0 });
      expect((await mustGet(store, forever.id)).ttlMs).toBeNull();
      await store.reapExpired();
      await sleep(5);
      await store.reapExpired();
      expect((await mustGet(store, forever.id)).ttlMs).toBeNull();
      expect(await store.taskPresence(forever.id)).toStrictEqual({ state: 'present', owner: 'alice' });
      expect(forever.token.isCancelled).toBe(false);
      expect(await listAllIds(store)).toStrictEqual([forever.id]);
      await raised(doomed.token);

      // A never-expiring task can still be given a ttl.
      expect(await store.setTtl(forever.id, LONG_TTL)).toBe(true);
      expect((await mustGet(store, forever.id)).ttlMs).toBe(LONG_TTL);
    });
  });

  describe('presence and cleanup passes', () => {
    const open = useStores(target);

    it('reapExpired turns expired tasks into tombstones that still report expired with their owner', async () => {
      const store = await open({ tombstoneRetentionMs: LONG_TTL });
      const working = await createTask(store, { ttlMs: 0, owner: 'alice' });
      const unowned = await createTask(store, { ttlMs: 0, owner: null });
      const completed = await createTask(store, { owner: '' });
      await finish(store, completed.id, 'complete');
      expect(await store.setTtl(completed.id, 0)).toBe(true);
      const live = await createTask(store, { owner: 'alice' });
      const forever = await createTask(store, { ttlMs: null });

      const expired: [string, TaskOwner][] = [
        [working.id, 'alice'],
        [unowned.id, null],
        [completed.id, ''],
      ];
      for (const [id, owner] of expired) {
        expect(await store.taskPresence(id), 'before the pass').toStrictEqual({ state: 'expired', owner });
      }

      expect(await store.reapExpired()).toStrictEqual({ tombstoned: 3, purged: 0 });
      for (const [id, owner] of expired) {
        expect(await store.taskPresence(id), 'after the pass').toStrictEqual({ state: 'expired', owner });
        expect(await store.getTask(id)).toBeNull();
        expect(await store.taskOwner(id)).toBeNull();
        expect(await store.setTtl(id, LONG_TTL)).toBe(false);
        expect(await store.cancelTask(id)).toBeNull();
      }
      expect(await store.taskPresence(live.id)).toStrictEqual({ state: 'present', owner: 'alice' });
      expect(await store.taskPresence(forever.id)).toStrictEqual({ state: 'present', owner: null });
      expect((await listAllIds(store)).sort()).toStrictEqual([live.id, forever.id].sort());

      // Nothing new has expired and the tombstones are within their retention.
      expect(await store.reapExpired()).toStrictEqual({ tombstoned: 0, purged: 0 });
      expect(await store.taskPresence(working.id)).toStrictEqual({ state: 'expired', owner: 'alice' });
    });

    it('a tombstone older than the retention is purged, after which the task is missing', async () => {
      const store = await open({ tombstoneRetentionMs: 0 });
      const doomed = await createTask(store, { ttlMs: 0, owner: 'alice' });
      const live = await createTask(store, { owner: 'alice' });
      expect(await store.taskPresence(doomed.id)).toStrictEqual({ state: 'expired', owner: 'alice' });

      const first = await store.reapExpired();
      await sleep(5);
      const second = await store.reapExpired();
      expect(first.tombstoned + second.tombstoned).toBe(1);
      expect(first.purged + second.purged).toBe(1);
      expect(await store.taskPresence(doomed.id)).toStrictEqual({ state: 'missing' });
      expect(await store.discardTask(doomed.id)).toBe(false);
      expect(await store.taskPresence(live.id)).toStrictEqual({ state: 'present', owner: 'alice' });
      expect(await store.reapExpired()).toStrictEqual({ tombstoned: 0, purged: 0 });
    });

    it('a tombstone is kept for tombstoneRetentionMs after the task expired, and purged by the first pass after that', async () => {
      const retention = 1_000;
      const store = await open({ tombstoneRetentionMs: retention });
      const doomed = await createTask(store, { ttlMs: 0, owner: 'alice' });
      const expiredAt = Date.now();
      await store.reapExpired();
      await store.reapExpired();
      if (Date.now() - expiredAt < retention) {
        expect(await store.taskPresence(doomed.id), 'within the retention').toStrictEqual({ state: 'expired', owner: 'alice' });
      }
      await sleep(retention + 50);
      await store.reapExpired();
      expect(await store.taskPresence(doomed.id), 'after the retention').toStrictEqual({ state: 'missing' });
    });

    it('a pass with nothing expired changes nothing', async () => {
      const store = await open({ tombstoneRetentionMs: 0 });
      const { id } = await createTask(store);
      expect(await store.reapExpired()).toStrictEqual({ tombstoned: 0, purged: 0 });
      expect(await store.taskPresence(id)).toStrictEqual({ state: 'present', owner: null });
    });
  });
}
