/**
 * Creation, reads, ownership, results and errors, terminal immutability, status updates, default
 * status messages, timestamps, metadata and discarding.
 */
import { describe, expect, it } from 'vitest';
import { ownerMatches, type CallToolResult, type JsonRpcError, type TaskOwner, type TaskStatus } from '../../src/index.js';
import {
  FINISHES,
  LONG_TTL,
  TOOL,
  answers,
  ask,
  createTask,
  expectStoreError,
  expectWellFormed,
  finish,
  listAllIds,
  mustGet,
  mustSnapshot,
  observe,
  outstandingKeys,
  resultText,
  sampleError,
  sleep,
  statusOf,
  unknownId,
  useStores,
  within,
  type ConformanceTarget,
} from './harness.js';

export function lifecycleConformance(target: ConformanceTarget): void {
  describe('creation and reads', () => {
    const open = useStores(target);

    it('a created task is working, readable by id, reports its ttl, and its token starts un-raised', async () => {
      const store = await open();
      const { id, token } = await createTask(store);
      expect(id).not.toBe('');
      expect(token.isCancelled).toBe(false);
      expect(token.signal.aborted).toBe(false);

      const task = await mustGet(store, id);
      expect(task.taskId).toBe(id);
      expect(task.status).toBe('working');
      expect(task.ttlMs).toBe(LONG_TTL);

      const snapshot = await mustSnapshot(store, id);
      expect(snapshot.task).toStrictEqual(task);
      expect(snapshot.result).toBeNull();
      expect(snapshot.error).toBeNull();
    });

    it('every createTask returns a distinct id of 32 lowercase hex characters', async () => {
      const store = await open();
      const ids = new Set<string>();
      for (let i = 0; i < 9; i++) {
        const { id } = await createTask(store);
        expect(id).toMatch(/^[0-9a-f]{32}$/);
        ids.add(id);
      }
      expect(ids.size).toBe(9);
    });

    it('a new task says "Task started", was last updated when created, and omits what was not given', async () => {
      const store = await open();
      const before = Date.now();
      const { id } = await createTask(store);
      const after = Date.now();
      const task = await mustGet(store, id);

      expect(task.statusMessage).toBe('Task started');
      expect(task.lastUpdatedAt).toBe(task.createdAt);
      // The store's clock (the database's, for a remote store) may differ slightly from ours.
      const created = Date.parse(task.createdAt);
      expect(created).toBeGreaterThanOrEqual(before - 5_000);
      expect(created).toBeLessThanOrEqual(after + 5_000);
      expect('_meta' in task).toBe(false);
      expect('pollIntervalMs' in task).toBe(false);
      expect(Object.values(task)).not.toContain(undefined);
    });

    it('pollIntervalMs given to createTask is reported', async () => {
      const store = await open();
      const { taskId } = await store.createTask({ toolName: TOOL, pollIntervalMs: 2_500 });
      expect((await mustGet(store, taskId)).pollIntervalMs).toBe(2_500);
    });

    it('createTask defaults: arguments null, owner null, the default ttl of 300000 ms', async () => {
      const store = await open();
      const { taskId } = await store.createTask({ toolName: 'deploy' });
      expect((await mustGet(store, taskId)).ttlMs).toBe(300_000);
      expect(await store.taskOwner(taskId)).toStrictEqual({ owner: null });
      const resume = await store.resumeContext(taskId);
      expect(resume?.toolName).toBe('deploy');
      expect(resume?.arguments).toBeNull();
    });

    it('createTask with explicit undefined options behaves as if they were omitted', async () => {
      const store = await open();
      const { taskId } = await store.createTask({ toolName: TOOL, arguments: undefined, ttlMs: undefined, owner: undefined });
      expect((await mustGet(store, taskId)).ttlMs).toBe(300_000);
      expect(await store.taskOwner(taskId)).toStrictEqual({ owner: null });
      expect((await store.resumeContext(taskId))?.arguments).toBeNull();
    });

    it('the defaultTtlMs option replaces 300000 as the default ttl', async () => {
      const store = await open({ defaultTtlMs: 42_000 });
      const { taskId } = await store.createTask({ toolName: TOOL });
      expect((await mustGet(store, taskId)).ttlMs).toBe(42_000);
      const { id } = await createTask(store, { ttlMs: 7_000 });
      expect((await mustGet(store, id)).ttlMs).toBe(7_000);
    });

    it('arguments of any JSON shape are kept whole', async () => {
      const store = await open();
      const values: unknown[] = [null, 0, -1.5, true, 'text', [], [1, 'two', { three: [3] }], { nested: { deep: [null, false] }, 'ü': '✓ 😀' }];
      for (const value of values) {
        const { id } = await createTask(store, { arguments: value });
        expect((await store.resumeContext(id))?.arguments).toStrictEqual(value);
      }
    });

    it('an unknown task id reads as absent everywhere, and every transition answers not-applied', async () => {
      const store = await open();
      const { id: existing } = await createTask(store);
      // A fresh random id, a malformed one, a real id with its case changed or with anything
      // around it: all name no task.
      for (const id of [unknownId(), 'not-a-task-id', '', existing.toUpperCase(), `x${existing}`, `${existing}0`, ` ${existing}`]) {
        expect(await store.getTask(id), id).toBeNull();
        expect(await store.getTaskResult(id), id).toBeNull();
        expect(await store.taskOwner(id), id).toBeNull();
        expect(await store.taskPresence(id), id).toStrictEqual({ state: 'missing' });
        expect(await store.outstandingInputRequests(id), id).toBeNull();
        expect(await store.applyInputResponses(id, answers('k')), id).toBeNull();
        expect(await store.inputResponses(id), id).toBeNull();
        expect(await store.resumeContext(id), id).toBeNull();
        expect(await within('waitForCompletion on an unknown id', store.waitForCompletion(id)), id).toBeNull();

        expect(await store.completeTask(id, resultText('x')), id).toBe(false);
        expect(await store.failTask(id, sampleError()), id).toBe(false);
        expect(await store.cancelTask(id), id).toBeNull();
        expect(await store.setTtl(id, LONG_TTL), id).toBe(false);
        expect(await store.requireInput(id, ask('k')), id).toBe(false);
        expect(await store.setStatus(id, 'working', 'progress'), id).toBe(false);
        expect(await store.setTaskMeta(id, {}), id).toBe(false);
        expect(await store.discardTask(id), id).toBe(false);
      }
      expect(await listAllIds(store)).toStrictEqual([existing]);
      expect(await statusOf(store, existing)).toBe('working');
    });
  });

  describe('ownership', () => {
    const open = useStores(target);
    const OWNERS: [TaskOwner, string][] = [
      [null, 'an anonymous task'],
      ['alice', 'a task owned by alice'],
      ['bob', 'a task owned by bob'],
      ['', 'a task owned by the empty principal, which is not anonymous'],
    ];

    it('taskOwner and taskPresence report the owner given to createTask, with null and "" distinct', async () => {
      const store = await open();
      for (const [owner, description] of OWNERS) {
        const { id } = await createTask(store, { owner });
        expect(await store.taskOwner(id), description).toStrictEqual({ owner });
        expect(await store.taskPresence(id), description).toStrictEqual({ state: 'present', owner });

        const stored = (await store.taskOwner(id))!.owner;
        for (const principal of [null, 'alice', 'bob', ''] as TaskOwner[]) {
          expect(ownerMatches(stored, principal), `${description}: ownerMatches(${stored}, ${principal})`).toBe(owner === principal);
        }
      }
    });

    it('ownerMatches follows the authorization table: equality, and an unowned task is not open to a principal', () => {
      expect(ownerMatches(null, null)).toBe(true);
      expect(ownerMatches('alice', 'alice')).toBe(true);
      expect(ownerMatches('alice', 'bob')).toBe(false);
      expect(ownerMatches('alice', null)).toBe(false);
      expect(ownerMatches(null, 'alice')).toBe(false);
      expect(ownerMatches('', null)).toBe(false);
      expect(ownerMatches(null, '')).toBe(false);
      expect(ownerMatches('', '')).toBe(true);
    });

    it('no transition changes a task\'s owner', async () => {
      const store = await open();
      const owned = { owner: 'alice' };
      const { id } = await createTask(store, { owner: 'alice' });
      await store.requireInput(id, ask('k'));
      expect(await store.taskOwner(id), 'after requireInput').toStrictEqual(owned);
      await store.applyInputResponses(id, answers('k'));
      expect(await store.taskOwner(id), 'after applyInputResponses').toStrictEqual(owned);
      await store.setTtl(id, LONG_TTL + 1);
      expect(await store.taskOwner(id), 'after setTtl').toStrictEqual(owned);
      await store.setStatus(id, 'working', 'step 2');
      expect(await store.taskOwner(id), 'after setStatus').toStrictEqual(owned);
      await store.setTaskMeta(id, { a: 1 });
      expect(await store.taskOwner(id), 'after setTaskMeta').toStrictEqual(owned);
      await store.completeTask(id, resultText('done'));
      expect(await store.taskOwner(id), 'after completeTask').toStrictEqual(owned);

      for (const how of ['fail', 'cancel'] as const) {
        const { id } = await createTask(store, { owner: 'alice' });
        await finish(store, id, how);
        expect(await store.taskOwner(id), `after ${how}`).toStrictEqual(owned);
        expect(await store.taskPresence(id), `after ${how}`).toStrictEqual({ state: 'present', owner: 'alice' });
      }
    });
  });

  describe('results and errors', () => {
    const open = useStores(target);

    it('completeTask stores the result whole and completes the task', async () => {
      const store = await open();
      const { id } = await createTask(store);
      const given: CallToolResult = {
        content: [{ type: 'text', text: 'report ready' }],
        structuredContent: { rows: 3, ok: true },
        _meta: { 'io.example/trace': 'abc' },
      };
      expect(await store.completeTask(id, given)).toBe(true);
      const { task, result, error } = await mustSnapshot(store, id);
      expect(task.status).toBe('completed');
      expect(task.statusMessage).toBe('Task completed');
      expect(result).toStrictEqual(given);
      expect(error).toBeNull();
    });

    it('a result with isError completes the task rather than failing it', async () => {
      const store = await open();
      const { id } = await createTask(store);
      const given: CallToolResult = { ...resultText('region eu-west-3 is not enabled'), isError: true };
      expect(await store.completeTask(id, given)).toBe(true);
      const { task, result, error } = await mustSnapshot(store, id);
      expect(task.status).toBe('completed');
      expect(result).toStrictEqual(given);
      expect(result?.isError).toBe(true);
      expect(error).toBeNull();
    });

    it('failTask stores the whole JSON-RPC error, data included, and fails the task', async () => {
      const store = await open();
      const { id } = await createTask(store);
      expect(await store.failTask(id, sampleError())).toBe(true);
      const { task, result, error } = await mustSnapshot(store, id);
      expect(task.status).toBe('failed');
      expect(task.statusMessage).toBe('Task failed: unknown region');
      expect(result).toBeNull();
      expect(error).toStrictEqual({ code: -32602, message: 'unknown region', data: { field: 'region' } });

      const { id: plain } = await createTask(store);
      const withoutData: JsonRpcError = { code: -32603, message: 'boom' };
      expect(await store.failTask(plain, withoutData)).toBe(true);
      const stored = (await mustSnapshot(store, plain)).error;
      expect(stored).toStrictEqual(withoutData);
      expect('data' in stored!).toBe(false);
    });
  });

  describe('terminal states are immutable', () => {
    const open = useStores(target);

    it('a completed task keeps its first result; every transition is refused and cancelTask returns it unchanged', async () => {
      const store = await open();
      const { id } = await createTask(store);
      await finish(store, id, 'complete');
      const before = await mustSnapshot(store, id);
      await sleep(5);

      expect(await store.completeTask(id, resultText('stale'))).toBe(false);
      expect(await store.failTask(id, sampleError())).toBe(false);
      expect(await store.cancelTask(id, 'late')).toStrictEqual(before.task);
      expect(await store.requireInput(id, ask('k'))).toBe(false);
      expect(await store.applyInputResponses(id, answers('k'))).toBeNull();
      expect(await store.setStatus(id, 'working', 'too late')).toBe(false);
      expect(await store.setStatus(id, 'input_required')).toBe(false);
      expect(await mustSnapshot(store, id)).toStrictEqual(before);
      expect(before.result).toStrictEqual(resultText('done'));
    });

    it('a failed task keeps its first error', async () => {
      const store = await open();
      const { id } = await createTask(store);
      await finish(store, id, 'fail');
      const before = await mustSnapshot(store, id);
      await sleep(5);

      expect(await store.completeTask(id, resultText('stale'))).toBe(false);
      expect(await store.failTask(id, { code: -32603, message: 'second' })).toBe(false);
      expect(await store.cancelTask(id)).toStrictEqual(before.task);
      expect(await store.requireInput(id, ask('k'))).toBe(false);
      expect(await store.applyInputResponses(id, answers('k'))).toBeNull();
      expect(await store.setStatus(id, 'working')).toBe(false);
      expect(await mustSnapshot(store, id)).toStrictEqual(before);
    });

    it('a cancelled task stays cancelled with neither result nor error', async () => {
      const store = await open();
      const { id } = await createTask(store);
      await finish(store, id, 'cancel');
      const before = await mustSnapshot(store, id);
      expect(before.task.status).toBe('cancelled');
      await sleep(5);

      expect(await store.completeTask(id, resultText('stale'))).toBe(false);
      expect(await store.failTask(id, sampleError())).toBe(false);
      expect(await store.cancelTask(id, 'again')).toStrictEqual(before.task);
      expect(await store.requireInput(id, ask('k'))).toBe(false);
      expect(await store.applyInputResponses(id, answers('k'))).toBeNull();
      expect(await store.setStatus(id, 'working')).toBe(false);
      const after = await mustSnapshot(store, id);
      expect(after).toStrictEqual(before);
      expect(after.result).toBeNull();
      expect(after.error).toBeNull();
    });

    it('a terminal task has no outstanding input requests', async () => {
      const store = await open();
      for (const how of FINISHES) {
        const { id } = await createTask(store);
        expect(await store.requireInput(id, ask('k'))).toBe(true);
        await finish(store, id, how);
        expect(await store.outstandingInputRequests(id), how).toStrictEqual({});
      }
    });
  });

  describe('status updates', () => {
    const open = useStores(target);

    it('setStatus records a non-terminal status and message', async () => {
      const store = await open();
      const { id } = await createTask(store);
      expect(await store.setStatus(id, 'working', 'step 2 of 5')).toBe(true);
      const task = await mustGet(store, id);
      expect(task.status).toBe('working');
      expect(task.statusMessage).toBe('step 2 of 5');
    });

    it('setStatus answers false for an unknown or terminal task and leaves the terminal task alone', async () => {
      const store = await open();
      expect(await store.setStatus(unknownId(), 'working')).toBe(false);
      const { id } = await createTask(store);
      await finish(store, id, 'complete');
      expect(await store.setStatus(id, 'working', 'too late')).toBe(false);
      const task = await mustGet(store, id);
      expect(task.status).toBe('completed');
      expect(task.statusMessage).toBe('Task completed');
    });

    it('setStatus without a message keeps the current message', async () => {
      const store = await open();
      const { id } = await createTask(store);
      expect(await store.setStatus(id, 'working')).toBe(true);
      expect((await mustGet(store, id)).statusMessage).toBe('Task started');
      expect(await store.setStatus(id, 'working', 'step 2 of 5')).toBe(true);
      expect(await store.setStatus(id, 'working')).toBe(true);
      expect((await mustGet(store, id)).statusMessage).toBe('step 2 of 5');
      expect(await store.setStatus(id, 'working', null)).toBe(true);
      expect((await mustGet(store, id)).statusMessage).toBe('step 2 of 5');
    });

    it('setStatus to a terminal status throws invalid_transition and changes nothing', async () => {
      const store = await open();
      const { id, token } = await createTask(store);
      const before = await observe(store, [id]);
      for (const status of ['completed', 'failed', 'cancelled'] as TaskStatus[]) {
        await expectStoreError(store.setStatus(id, status, 'done'), 'invalid_transition', `setStatus(${status})`);
      }
      expect(await observe(store, [id])).toStrictEqual(before);
      expect(token.isCancelled).toBe(false);
    });
  });

  describe('default status messages', () => {
    const open = useStores(target);

    it('each transition leaves the reference store\'s message', async () => {
      const store = await open();
      const { id } = await createTask(store);
      expect((await mustGet(store, id)).statusMessage).toBe('Task started');

      await store.requireInput(id, ask('a'));
      expect((await mustGet(store, id)).statusMessage).toBe('Awaiting client input');
      await store.requireInput(id, ask('a'), 'needs a decision');
      expect((await mustGet(store, id)).statusMessage).toBe('needs a decision');
      // Re-parking without a message resets it rather than keeping the custom one.
      await store.requireInput(id, ask('a'), null);
      expect((await mustGet(store, id)).statusMessage).toBe('Awaiting client input');

      await store.applyInputResponses(id, answers('a'));
      expect((await mustGet(store, id)).statusMessage).toBe('Task resumed');

      await store.completeTask(id, resultText('done'));
      expect((await mustGet(store, id)).statusMessage).toBe('Task completed');

      const { id: failing } = await createTask(store);
      await store.failTask(failing, { code: -32000, message: 'Something went wrong' });
      expect((await mustGet(store, failing)).statusMessage).toBe('Task failed: Something went wrong');

      const messages: [string | null | undefined, string][] = [
        ['user closed the tab', 'Cancelled: user closed the tab'],
        [null, 'Task cancelled'],
        [undefined, 'Task cancelled'],
      ];
      for (const [reason, message] of messages) {
        const { id: cancelling } = await createTask(store);
        const returned = await store.cancelTask(cancelling, reason);
        expect(returned?.statusMessage, String(reason)).toBe(message);
        expect((await mustGet(store, cancelling)).statusMessage, String(reason)).toBe(message);
      }
    });
  });

  describe('timestamps', () => {
    const open = useStores(target);
    const STEP = 10;

    it('lastUpdatedAt moves forward on every transition, createdAt never moves, and setTaskMeta leaves both', async () => {
      const store = await open();
      const { id } = await createTask(store);
      const created = await mustGet(store, id);
      let previous = created.lastUpdatedAt;

      const steps: [string, () => Promise<unknown>][] = [
        ['setStatus', () => store.setStatus(id, 'working', 'step 2')],
        ['requireInput', () => store.requireInput(id, ask('a', 'b'))],
        ['applyInputResponses (partial)', () => store.applyInputResponses(id, answers('a'))],
        ['applyInputResponses (resume)', () => store.applyInputResponses(id, answers('b'))],
        ['completeTask', () => store.completeTask(id, resultText('done'))],
      ];
      for (const [what, step] of steps) {
        await sleep(STEP);
        await step();
        const task = await mustGet(store, id);
        expect(task.createdAt, `${what} moved createdAt`).toBe(created.createdAt);
        expect(task.lastUpdatedAt > previous, `${what} did not advance lastUpdatedAt past ${previous}`).toBe(true);
        previous = task.lastUpdatedAt;

        await sleep(STEP);
        expect(await store.setTaskMeta(id, { step: what })).toBe(true);
        const afterMeta = await mustGet(store, id);
        expect(afterMeta.lastUpdatedAt, `setTaskMeta after ${what} moved lastUpdatedAt`).toBe(previous);
        expect(afterMeta.createdAt).toBe(created.createdAt);
      }

      // Refused transitions and a cancel of a finished task leave it as it was.
      await sleep(STEP);
      const finished = await mustGet(store, id);
      await store.completeTask(id, resultText('again'));
      await store.cancelTask(id, 'late');
      expect(await mustGet(store, id)).toStrictEqual(finished);
    });

    it('failTask and cancelTask advance lastUpdatedAt', async () => {
      const store = await open();
      for (const how of ['fail', 'cancel'] as const) {
        const { id } = await createTask(store);
        const before = await mustGet(store, id);
        await sleep(STEP);
        await finish(store, id, how);
        const after = await mustGet(store, id);
        expect(after.lastUpdatedAt > before.lastUpdatedAt, how).toBe(true);
        expect(after.createdAt).toBe(before.createdAt);
      }
    });

    it('every view of a task has the same well-formed shape', async () => {
      const store = await open();
      const { id } = await createTask(store);
      await store.setTaskMeta(id, { trace: 'abc' });
      const task = await mustGet(store, id);
      expect(task._meta).toStrictEqual({ trace: 'abc' });
      expect((await mustSnapshot(store, id)).task).toStrictEqual(task);
      const listed = (await store.listTasks()).tasks.find((t) => t.taskId === id);
      expect(listed).toStrictEqual(task);
      expectWellFormed(listed!);
      const cancelled = await store.cancelTask(id, 'stop');
      expectWellFormed(cancelled!);
      expect(cancelled).toStrictEqual(await mustGet(store, id));
    });
  });

  describe('task metadata', () => {
    const open = useStores(target);

    it('setTaskMeta stores metadata that every later view carries, through completion', async () => {
      const store = await open();
      const { id } = await createTask(store);
      const meta = { 'io.example/trace': 'abc123' };
      expect(await store.setTaskMeta(id, meta)).toBe(true);
      expect((await mustGet(store, id))._meta).toStrictEqual(meta);
      await finish(store, id, 'complete');
      expect((await mustSnapshot(store, id)).task._meta).toStrictEqual(meta);
    });

    it('setTaskMeta replaces the meta wholesale', async () => {
      const store = await open();
      const { id } = await createTask(store);
      expect(await store.setTaskMeta(id, { a: 1, keep: { deep: true } })).toBe(true);
      expect(await store.setTaskMeta(id, { b: 2 })).toBe(true);
      expect((await mustGet(store, id))._meta).toStrictEqual({ b: 2 });
      expect(await store.setTaskMeta(id, {})).toBe(true);
      expect((await mustGet(store, id))._meta).toStrictEqual({});
    });

    it('setTaskMeta works on every terminal task', async () => {
      const store = await open();
      for (const how of FINISHES) {
        const { id } = await createTask(store);
        await finish(store, id, how);
        const before = await mustSnapshot(store, id);
        expect(await store.setTaskMeta(id, { after: how }), how).toBe(true);
        const after = await mustSnapshot(store, id);
        expect(after.task._meta).toStrictEqual({ after: how });
        expect({ ...after.task, _meta: undefined }).toStrictEqual({ ...before.task, _meta: undefined });
        expect(after.result).toStrictEqual(before.result);
        expect(after.error).toStrictEqual(before.error);
      }
    });

    it('setTaskMeta answers false for an unknown task', async () => {
      const store = await open();
      expect(await store.setTaskMeta(unknownId(), {})).toBe(false);
    });
  });

  describe('discarding', () => {
    const open = useStores(target);

    it('discardTask removes a live task without raising its token; a second discard answers false', async () => {
      const store = await open();
      const { id, token } = await createTask(store, { owner: 'alice' });
      const { id: other } = await createTask(store);
      expect(await store.discardTask(id)).toBe(true);
      expect(await store.getTask(id)).toBeNull();
      expect(await store.getTaskResult(id)).toBeNull();
      expect(await store.taskOwner(id)).toBeNull();
      expect(await store.taskPresence(id)).toStrictEqual({ state: 'missing' });
      expect(await listAllIds(store)).toStrictEqual([other]);
      expect(token.isCancelled).toBe(false);
      expect(await store.discardTask(id)).toBe(false);
      expect(await store.discardTask(unknownId())).toBe(false);
    });

    it('discardTask removes a task in any state', async () => {
      const store = await open();
      const parked = await createTask(store);
      await store.requireInput(parked.id, ask('k'));
      const ids = [parked.id];
      for (const how of FINISHES) {
        const { id } = await createTask(store);
        await finish(store, id, how);
        ids.push(id);
      }
      for (const id of ids) {
        expect(await store.discardTask(id)).toBe(true);
        expect(await store.taskPresence(id)).toStrictEqual({ state: 'missing' });
        expect(await store.getTask(id)).toBeNull();
      }
      expect(await listAllIds(store)).toStrictEqual([]);
    });

    it('discardTask removes an expired record the store still holds, before or after a cleanup pass', async () => {
      const store = await open({ tombstoneRetentionMs: LONG_TTL });
      const held = await createTask(store, { owner: 'alice', ttlMs: 0 });
      const tombstone = await createTask(store, { owner: 'bob', ttlMs: 0 });
      expect(await store.taskPresence(held.id)).toStrictEqual({ state: 'expired', owner: 'alice' });
      expect(await store.discardTask(held.id)).toBe(true);
      expect(await store.taskPresence(held.id)).toStrictEqual({ state: 'missing' });

      await store.reapExpired();
      expect(await store.taskPresence(tombstone.id)).toStrictEqual({ state: 'expired', owner: 'bob' });
      expect(await store.discardTask(tombstone.id)).toBe(true);
      expect(await store.taskPresence(tombstone.id)).toStrictEqual({ state: 'missing' });
      expect(await store.discardTask(tombstone.id)).toBe(false);
    });

    it('outstanding input of a discarded task is gone with it', async () => {
      const store = await open();
      const { id } = await createTask(store);
      await store.requireInput(id, ask('k'));
      expect(await outstandingKeys(store, id)).toStrictEqual(['k']);
      expect(await store.discardTask(id)).toBe(true);
      expect(await store.outstandingInputRequests(id)).toBeNull();
      expect(await store.applyInputResponses(id, answers('k'))).toBeNull();
    });
  });
}
