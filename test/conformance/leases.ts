/**
 * Execution leases (src/contract/leases.ts): a leased task's lease, its end with the task, the
 * rescue of a task whose lease ran out (fail or resume), and the fence that keeps a runner that
 * lost its lease from recording anything. One instance plays the dead runner by giving its leases
 * up with `abandonLeases`; the suite drives the rescuer itself with `rescueLostTasks`.
 */
import { describe, expect, it } from 'vitest';
import { offersLeases, type LeaseOptions, type LeasingTaskStore, type ResumeRequest } from '../../src/index.js';
import {
  answers,
  ask,
  bad,
  expectStoreError,
  LONG_TTL,
  mustGet,
  mustSnapshot,
  resultText,
  sampleError,
  eventually,
  sleep,
  TOOL,
  useStores,
  within,
  type ConformanceTarget,
} from './harness.js';

/** Heartbeats fast enough to watch; the rescuer only when a test asks. */
const QUICK: LeaseOptions = { heartbeatMs: 40, leaseMs: 200, rescueIntervalMs: 3_600_000 };

export function leaseConformance(target: ConformanceTarget): void {
  describe('execution leases', () => {
    const openAny = useStores(target);
    const open = async (leases: LeaseOptions = {}): Promise<LeasingTaskStore> => {
      const store = await openAny({ leases: { ...QUICK, ...leases } });
      if (!offersLeases(store)) throw new Error(`${target.name} offers no leases`);
      return store;
    };
    const createLeased = async (store: LeasingTaskStore, toolName = TOOL) =>
      (await store.leases.createLeasedTask({ toolName, arguments: { step: 1 }, ttlMs: LONG_TTL })).taskId;

    it('createLeasedTask leases the task to this instance; createTask leases nothing', async () => {
      const store = await open();
      const before = Date.now();
      const leased = await createLeased(store);
      const lease = await store.leases.leaseOf(leased);
      expect(lease).toMatchObject({ runnerId: store.leases.runnerId, attempts: 0, lostRunner: null });
      const expiresAt = Date.parse(lease!.expiresAt);
      expect(expiresAt).toBeGreaterThan(before);
      expect(expiresAt).toBeLessThanOrEqual(Date.now() + 200 + 1_000);
      expect(store.leases.runnerId).toMatch(/^.+:\d+:[0-9a-f]{8}$/);

      const plain = (await store.createTask({ toolName: TOOL })).taskId;
      expect(await store.leases.leaseOf(plain)).toBeNull();
      expect(await mustGet(store, leased)).toMatchObject({ status: 'working' });
    });

    it('createLeasedTask returns the task as created, as getTask reads it', async () => {
      const store = await open();
      const created = await store.leases.createLeasedTask({ toolName: TOOL, ttlMs: LONG_TTL, pollIntervalMs: 250 });
      expect(created.task).toStrictEqual(await store.getTask(created.taskId));
      expect(created.task).toMatchObject({ taskId: created.taskId, status: 'working', ttlMs: LONG_TTL, pollIntervalMs: 250 });
      for (const ttlMs of [null, undefined]) {
        const other = await store.leases.createLeasedTask({ toolName: TOOL, ttlMs, owner: 'alice', arguments: { step: 2 } });
        expect(other.task).toStrictEqual(await store.getTask(other.taskId));
      }
    });

    it('the heartbeat keeps pushing the deadline out', async () => {
      const store = await open();
      const id = await createLeased(store);
      const first = Date.parse((await store.leases.leaseOf(id))!.expiresAt);
      await sleep(300);
      const later = Date.parse((await store.leases.leaseOf(id))!.expiresAt);
      expect(later).toBeGreaterThan(first);
      expect(await store.leases.rescueLostTasks()).toStrictEqual({ failed: 0, resumed: 0 });
      expect((await mustGet(store, id)).status).toBe('working');
    });

    it('acquireLease takes an open task; releaseLease gives it back; neither applies to a finished or unknown task', async () => {
      const store = await open();
      const id = (await store.createTask({ toolName: TOOL })).taskId;
      expect(await store.leases.acquireLease(id)).toBe(true);
      expect(await store.leases.acquireLease(id), 'the holder may take it again').toBe(true);
      expect((await store.leases.leaseOf(id))?.runnerId).toBe(store.leases.runnerId);
      expect(await store.leases.releaseLease(id)).toBe(true);
      expect(await store.leases.leaseOf(id)).toBeNull();
      expect(await store.leases.releaseLease(id)).toBe(false);

      await store.completeTask(id, resultText('done'));
      expect(await store.leases.acquireLease(id)).toBe(false);
      expect(await store.leases.acquireLease('0'.repeat(32))).toBe(false);
      expect(await store.leases.leaseOf(id)).toBeNull();
    });

    it('every way out of working ends the lease with it', async () => {
      const store = await open();
      const completed = await createLeased(store);
      const failed = await createLeased(store);
      const cancelled = await createLeased(store);
      expect(await store.completeTask(completed, resultText('done'))).toBe(true);
      expect(await store.failTask(failed, sampleError())).toBe(true);
      expect((await store.cancelTask(cancelled, 'stop'))?.status).toBe('cancelled');
      for (const id of [completed, failed, cancelled]) expect(await store.leases.leaseOf(id)).toBeNull();
      expect(await store.leases.rescueLostTasks()).toStrictEqual({ failed: 0, resumed: 0 });
    });

    it('a lost runner fails its task by default, with an error naming the runner', async () => {
      const store = await open();
      const id = await createLeased(store);
      const untouched = (await store.createTask({ toolName: TOOL })).taskId;
      expect(await store.leases.abandonLeases()).toBe(1);

      expect(await store.leases.rescueLostTasks()).toStrictEqual({ failed: 1, resumed: 0 });
      const snapshot = await mustSnapshot(store, id);
      expect(snapshot.task.status).toBe('failed');
      expect(snapshot.task.statusMessage).toMatch(new RegExp(`^Task failed: runner ${escape(store.leases.runnerId)} stopped renewing its lease`));
      expect(snapshot.error).toMatchObject({ code: -32603, data: { reason: 'runner_lost', lostRunner: store.leases.runnerId, attempts: 0 } });
      expect(await store.leases.leaseOf(id)).toBeNull();
      expect((await mustGet(store, untouched)).status).toBe('working');

      expect(await store.leases.rescueLostTasks(), 'a task is rescued once').toStrictEqual({ failed: 0, resumed: 0 });
      expect(await store.completeTask(id, resultText('too late'))).toBe(false);
    });

    it('a resume hook runs a rescued task of its tool once, told the attempts and the lost runner', async () => {
      const store = await open();
      const calls: ResumeRequest[] = [];
      store.leases.onResume(TOOL, async (request) => {
        calls.push(request);
        expect((await store.leases.leaseOf(request.taskId))?.runnerId, 'the hook runs under this instance’s lease').toBe(store.leases.runnerId);
        await store.completeTask(request.taskId, resultText(`resumed from step ${String((request.context.arguments as { step: number }).step)}`));
      });
      const id = await createLeased(store);
      expect(await store.setStatus(id, 'working', 'step 3 of 5')).toBe(true);
      await store.leases.abandonLeases();

      expect(await store.leases.rescueLostTasks()).toStrictEqual({ failed: 0, resumed: 1 });
      const done = await within('the resumed task completing', store.waitForCompletion(id));
      expect(done?.result).toStrictEqual(resultText('resumed from step 1'));
      expect(calls).toHaveLength(1);
      expect(calls[0]).toMatchObject({
        taskId: id,
        previousAttempts: 1,
        lostRunner: store.leases.runnerId,
        lastStatusMessage: 'step 3 of 5',
        context: { toolName: TOOL, arguments: { step: 1 } },
      });
      expect(calls[0]!.task.statusMessage).toMatch(/^Resuming after runner .+ was lost \(resume 1\)$/);
      expect(await store.leases.leaseOf(id)).toBeNull();
      expect(await store.leases.rescueLostTasks()).toStrictEqual({ failed: 0, resumed: 0 });
    });

    it('a hook that throws fails the task with its reason', async () => {
      const store = await open();
      store.leases.onResume(TOOL, async () => {
        throw new Error('checkpoint unreadable');
      });
      const id = await createLeased(store);
      await store.leases.abandonLeases();
      await store.leases.rescueLostTasks();
      const failed = await within('the task failing', store.waitForCompletion(id));
      expect(failed?.error).toMatchObject({ message: `resuming ${TOOL} failed: checkpoint unreadable` });
    });

    it('after maxAttempts resumes the next rescue fails the task; per-tool settings win over the store’s', async () => {
      const store = await open({ maxAttempts: 5, tools: { [TOOL]: { maxAttempts: 1 } } });
      let release!: () => void;
      const stuck = new Promise<void>((resolve) => (release = resolve));
      let resumes = 0;
      store.leases.onResume(TOOL, async () => {
        resumes++;
        await stuck;
      });
      const id = await createLeased(store);
      await store.leases.abandonLeases();
      expect(await store.leases.rescueLostTasks()).toStrictEqual({ failed: 0, resumed: 1 });
      await eventually('the hook starting', async () => resumes === 1);

      await store.leases.abandonLeases(); // the resumed run dies too
      expect(await store.leases.rescueLostTasks()).toStrictEqual({ failed: 1, resumed: 0 });
      release();
      const snapshot = await mustSnapshot(store, id);
      expect(snapshot.task.status).toBe('failed');
      expect(snapshot.error).toMatchObject({ data: { reason: 'runner_lost', attempts: 1 } });
      expect(snapshot.error?.message).toMatch(/after 1 resume; the task was abandoned$/);
      expect(resumes).toBe(1);
    });

    it('a rescued task waiting for a resume is fenced: its old runner records nothing, a cancel still works', async () => {
      // `resume` with no hook here: the task waits for an instance that has one.
      const store = await open({ tools: { [TOOL]: { onLost: 'resume' } } });
      const id = await createLeased(store);
      await store.leases.abandonLeases();
      expect(await store.leases.rescueLostTasks()).toStrictEqual({ failed: 0, resumed: 1 });
      expect(await store.leases.leaseOf(id)).toMatchObject({ runnerId: null, attempts: 1, lostRunner: store.leases.runnerId });

      expect(await store.setStatus(id, 'working', 'still here')).toBe(false);
      expect(await store.requireInput(id, ask('k'))).toBe(false);
      expect(await store.completeTask(id, resultText('late'))).toBe(false);
      expect(await store.failTask(id, sampleError())).toBe(false);
      expect(await store.leases.acquireLease(id)).toBe(false);
      const task = await mustGet(store, id);
      expect(task.status).toBe('working');
      expect(task.statusMessage).toMatch(/^Resuming after runner/);

      expect((await store.cancelTask(id, 'gave up'))?.status).toBe('cancelled');
      expect(await store.leases.leaseOf(id)).toBeNull();
    });

    it('a task waiting for input is never rescued; once answered, a dead runner’s task is', async () => {
      const store = await open();
      const id = await createLeased(store);
      expect(await store.requireInput(id, ask('approve'))).toBe(true);
      await store.leases.abandonLeases();
      expect(await store.leases.rescueLostTasks()).toStrictEqual({ failed: 0, resumed: 0 });
      expect((await mustGet(store, id)).status).toBe('input_required');

      expect(await store.applyInputResponses(id, answers('approve'))).not.toBeNull();
      expect(await store.leases.rescueLostTasks()).toStrictEqual({ failed: 1, resumed: 0 });
      expect((await mustGet(store, id)).status).toBe('failed');
    });

    it('lease options and hooks are validated', async () => {
      for (const leases of [
        { heartbeatMs: 100, leaseMs: 200 },
        { heartbeatMs: 0 },
        { leaseMs: -1 },
        { onLost: 'retry' },
        { maxAttempts: 1.5 },
        { tools: { [TOOL]: { onLost: 'later' } } },
        { heartbeat: 10 },
      ]) {
        await expectStoreError(target.createStore({ leases: bad(leases) }), 'invalid_input', `leases ${JSON.stringify(leases)}`);
      }
      const store = await open();
      await expectStoreError(Promise.resolve().then(() => store.leases.onResume('', async () => {})), 'invalid_input', 'an empty tool name');
      await expectStoreError(Promise.resolve().then(() => store.leases.onResume(TOOL, bad(5))), 'invalid_input', 'a hook that is no function');
      await expectStoreError(store.leases.acquireLease(bad(5)), 'invalid_input', 'acquireLease(5)');
      await expectStoreError(store.leases.leaseOf(bad(null)), 'invalid_input', 'leaseOf(null)');
      await expectStoreError(store.leases.createLeasedTask(bad({ toolName: 7 })), 'invalid_input', 'createLeasedTask with a bad input');
    });

    it('unregistering a hook leaves rescued tasks of its tool to the store’s policy', async () => {
      const store = await open();
      const unregister = store.leases.onResume(TOOL, async () => {
        throw new Error('must not run');
      });
      unregister();
      const id = await createLeased(store);
      await store.leases.abandonLeases();
      expect(await store.leases.rescueLostTasks()).toStrictEqual({ failed: 1, resumed: 0 });
      expect((await mustGet(store, id)).status).toBe('failed');
    });
  });
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
