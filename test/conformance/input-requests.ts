/**
 * Input requests: requireInput, outstandingInputRequests, applyInputResponses, inputResponses and
 * resumeContext. A request key names one request over the task's whole lifetime: once answered or
 * superseded it is spent, and only an identical reissue of an outstanding key is not reuse.
 */
import { describe, expect, it } from 'vitest';
import type { InputRequests } from '../../src/index.js';
import {
  FINISHES,
  ROOTS,
  accept,
  answers,
  ask,
  askSomethingElse,
  createTask,
  elicit,
  expectStoreError,
  finish,
  mustGet,
  observe,
  outstandingKeys,
  sleep,
  statusOf,
  unknownId,
  useStores,
  type ConformanceTarget,
} from './harness.js';

export function inputRequestConformance(target: ConformanceTarget): void {
  describe('input requests', () => {
    const open = useStores(target);

    it('the full parking cycle: park, carry forward, supersede, answer in part, ignore, refuse reuse, resume, ask again', async () => {
      const store = await open();
      const { id } = await createTask(store);
      expect(await store.outstandingInputRequests(id), 'a working task has nothing outstanding').toStrictEqual({});

      // Parking a task.
      expect(await store.requireInput(id, ask('approval'), 'needs a decision')).toBe(true);
      const parked = await mustGet(store, id);
      expect(parked.status).toBe('input_required');
      expect(parked.statusMessage).toBe('needs a decision');
      expect(await outstandingKeys(store, id)).toStrictEqual(['approval']);

      // The set is replaced wholesale; a live key is carried forward by reissuing it.
      expect(await store.requireInput(id, ask('approval', 'region'))).toBe(true);
      expect(await outstandingKeys(store, id)).toStrictEqual(['approval', 'region']);

      // Leaving a key out supersedes it, and a superseded key is spent.
      expect(await store.requireInput(id, ask('region'))).toBe(true);
      await expectStoreError(store.requireInput(id, ask('approval')), 'invalid_transition', 'reissuing a superseded key');
      expect(await outstandingKeys(store, id)).toStrictEqual(['region']);

      // Partial answers.
      expect(await store.requireInput(id, ask('region', 'zone'))).toBe(true);
      expect(await store.applyInputResponses(id, answers('region'))).toStrictEqual({
        accepted: ['region'],
        ignored: [],
        stillOutstanding: ['zone'],
        complete: false,
      });
      expect(await statusOf(store, id)).toBe('input_required');

      // Keys that are not outstanding are ignored, not rejected.
      expect(await store.applyInputResponses(id, answers('region', 'never-issued'))).toStrictEqual({
        accepted: [],
        ignored: ['never-issued', 'region'],
        stillOutstanding: ['zone'],
        complete: false,
      });
      expect(await statusOf(store, id)).toBe('input_required');

      // An answered key is spent, and a live key cannot be repointed.
      await expectStoreError(store.requireInput(id, ask('region')), 'invalid_transition', 'reissuing an answered key');
      await expectStoreError(store.requireInput(id, askSomethingElse('zone')), 'invalid_transition', 'repointing a live key');
      expect(await outstandingKeys(store, id)).toStrictEqual(['zone']);

      // Answering the last request resumes the task.
      expect(await store.applyInputResponses(id, answers('zone'))).toStrictEqual({
        accepted: ['zone'],
        ignored: [],
        stillOutstanding: [],
        complete: true,
      });
      const resumed = await mustGet(store, id);
      expect(resumed.status).toBe('working');
      expect(resumed.statusMessage).toBe('Task resumed');
      expect(await store.outstandingInputRequests(id)).toStrictEqual({});

      // A new key on a later round is the normal case.
      expect(await store.requireInput(id, ask('confirm'))).toBe(true);
      expect(await statusOf(store, id)).toBe('input_required');
      expect(await outstandingKeys(store, id)).toStrictEqual(['confirm']);
    });

    it('outstandingInputRequests returns the requests exactly as issued', async () => {
      const store = await open();
      const { id } = await createTask(store);
      const requests: InputRequests = {
        approval: elicit('Deploy to production?'),
        roots: ROOTS,
        rootsWithParams: { method: 'roots/list', params: { _meta: { hint: 1 } } },
        summary: {
          method: 'sampling/createMessage',
          params: { messages: [{ role: 'user', content: { type: 'text', text: 'summarise' } }], maxTokens: 100 },
        },
      };
      expect(await store.requireInput(id, requests)).toBe(true);
      expect(await store.outstandingInputRequests(id)).toStrictEqual(requests);
    });

    it('an outstanding key can be carried forward again and again with the identical request, whatever its key order', async () => {
      const store = await open();
      const { id } = await createTask(store);
      const question = {
        method: 'elicitation/create' as const,
        params: { message: 'Which region?', requestedSchema: { type: 'object', properties: { region: { type: 'string' } } } },
      };
      const reordered = {
        params: { requestedSchema: { properties: { region: { type: 'string' } }, type: 'object' }, message: 'Which region?' },
        method: 'elicitation/create' as const,
      };
      expect(await store.requireInput(id, { region: question })).toBe(true);
      expect(await store.requireInput(id, { region: question })).toBe(true);
      expect(await store.requireInput(id, { region: reordered, zone: ROOTS })).toBe(true);
      expect(await store.requireInput(id, { zone: ROOTS, region: question }, 'still waiting')).toBe(true);
      expect(await store.outstandingInputRequests(id)).toStrictEqual({ region: question, zone: ROOTS });
      expect((await mustGet(store, id)).statusMessage).toBe('still waiting');
    });

    it('repointing an outstanding key at a different request is invalid_transition and changes nothing', async () => {
      const store = await open();
      const { id } = await createTask(store);
      await store.requireInput(id, { q: elicit('first question'), other: ROOTS }, 'waiting');
      await store.applyInputResponses(id, { other: accept({ n: 1 }) });
      const before = await observe(store, [id]);
      await sleep(5);

      await expectStoreError(store.requireInput(id, { q: elicit('second question') }), 'invalid_transition', 'a different elicitation');
      await expectStoreError(store.requireInput(id, { q: ROOTS }), 'invalid_transition', 'a different method');
      await expectStoreError(store.requireInput(id, { q: elicit('first question'), other: ROOTS }), 'invalid_transition', 'an answered key alongside');
      expect(await observe(store, [id])).toStrictEqual(before);
    });

    it('a refused call admits none of its keys: a fresh key next to a spent one stays unspent', async () => {
      const store = await open();
      const { id } = await createTask(store);
      await store.requireInput(id, ask('spent'));
      await store.requireInput(id, ask('live'));
      const before = await observe(store, [id]);

      await expectStoreError(store.requireInput(id, ask('fresh', 'live', 'spent')), 'invalid_transition', 'a mix with a spent key');
      expect(await observe(store, [id])).toStrictEqual(before);

      // "fresh" was never issued, so it can still be issued now.
      expect(await store.requireInput(id, ask('fresh', 'live'))).toBe(true);
      expect(await outstandingKeys(store, id)).toStrictEqual(['fresh', 'live']);
    });

    it('a superseded key is spent: its late answer is ignored and it cannot be reissued, identical or not', async () => {
      const store = await open();
      const { id } = await createTask(store);
      await store.requireInput(id, ask('old'));
      await store.requireInput(id, ask('new'));
      expect(await store.applyInputResponses(id, answers('old'))).toStrictEqual({
        accepted: [],
        ignored: ['old'],
        stillOutstanding: ['new'],
        complete: false,
      });
      expect(await store.inputResponses(id)).toStrictEqual({});
      await expectStoreError(store.requireInput(id, ask('old')), 'invalid_transition', 'identical reissue of a superseded key');
      await expectStoreError(store.requireInput(id, askSomethingElse('old')), 'invalid_transition', 'different reissue of a superseded key');
      expect(await outstandingKeys(store, id)).toStrictEqual(['new']);
    });

    it('an answered key is spent: a replayed answer is ignored and never overwrites the first one', async () => {
      const store = await open();
      const { id } = await createTask(store);
      await store.requireInput(id, ask('region', 'zone'));
      await store.applyInputResponses(id, { region: accept({ region: 'eu-west-3' }) });
      expect(await store.applyInputResponses(id, { region: accept({ region: 'us-east-1' }) })).toStrictEqual({
        accepted: [],
        ignored: ['region'],
        stillOutstanding: ['zone'],
        complete: false,
      });
      expect(await store.inputResponses(id)).toStrictEqual({ region: accept({ region: 'eu-west-3' }) });
      await expectStoreError(store.requireInput(id, ask('region', 'zone')), 'invalid_transition', 'reissuing an answered key');
      // Resuming and parking again does not unspend the key either.
      await store.applyInputResponses(id, answers('zone'));
      expect(await statusOf(store, id)).toBe('working');
      await expectStoreError(store.requireInput(id, ask('region')), 'invalid_transition', 'reissuing after resumption');
      await expectStoreError(store.requireInput(id, ask('zone')), 'invalid_transition', 'reissuing after resumption');
      expect(await statusOf(store, id)).toBe('working');
    });

    it('applyInputResponses reports sorted key lists, and complete exactly when nothing is outstanding', async () => {
      const store = await open();
      const { id } = await createTask(store);
      await store.requireInput(id, ask('zeta', 'alpha', 'mid', 'beta'));
      const applied = await store.applyInputResponses(id, {
        zeta: accept(),
        'z-never': accept(),
        mid: accept(),
        'a-never': accept(),
        alpha: accept(),
      });
      expect(applied).toStrictEqual({
        accepted: ['alpha', 'mid', 'zeta'],
        ignored: ['a-never', 'z-never'],
        stillOutstanding: ['beta'],
        complete: false,
      });
      expect(await store.applyInputResponses(id, {})).toStrictEqual({
        accepted: [],
        ignored: [],
        stillOutstanding: ['beta'],
        complete: false,
      });
      expect(await statusOf(store, id)).toBe('input_required');
      expect(await store.applyInputResponses(id, { beta: accept(), alpha: accept() })).toStrictEqual({
        accepted: ['beta'],
        ignored: ['alpha'],
        stillOutstanding: [],
        complete: true,
      });
      expect(await statusOf(store, id)).toBe('working');
    });

    it('a task with nothing outstanding ignores every answer and stays working', async () => {
      const store = await open();
      const { id } = await createTask(store);
      const before = await mustGet(store, id);
      await sleep(5);
      expect(await store.applyInputResponses(id, answers('stray'))).toStrictEqual({
        accepted: [],
        ignored: ['stray'],
        stillOutstanding: [],
        complete: true,
      });
      // Not even lastUpdatedAt moves.
      expect(await mustGet(store, id)).toStrictEqual(before);
      expect(await store.inputResponses(id)).toStrictEqual({});
      // An ignored key was never issued, so it is not spent.
      expect(await store.requireInput(id, ask('stray'))).toBe(true);
    });

    it('a parked task set back to working has nothing outstanding, ignores the answers, and may ask the same again', async () => {
      const store = await open();
      const { id } = await createTask(store);
      await store.requireInput(id, ask('k'));
      expect(await store.setStatus(id, 'working', 'carrying on')).toBe(true);
      expect(await store.outstandingInputRequests(id)).toStrictEqual({});
      expect(await store.applyInputResponses(id, answers('k'))).toStrictEqual({ accepted: [], ignored: ['k'], stillOutstanding: [], complete: true });
      expect(await store.inputResponses(id)).toStrictEqual({});
      expect(await statusOf(store, id)).toBe('working');
      // The key was never answered nor superseded: the same request is asked again, not reused.
      expect(await store.requireInput(id, ask('k'))).toBe(true);
      expect(await store.applyInputResponses(id, answers('k'))).toStrictEqual({ accepted: ['k'], ignored: [], stillOutstanding: [], complete: true });
    });

    it('applyInputResponses answers null for a terminal or unknown task', async () => {
      const store = await open();
      for (const how of FINISHES) {
        const { id } = await createTask(store);
        await store.requireInput(id, ask('k'));
        await finish(store, id, how);
        expect(await store.applyInputResponses(id, answers('k')), how).toBeNull();
        expect(await store.requireInput(id, ask('other')), how).toBe(false);
      }
      expect(await store.applyInputResponses(unknownId(), answers('k'))).toBeNull();
    });

    it('inputResponses accumulates every accepted answer whole, across rounds', async () => {
      const store = await open();
      const { id } = await createTask(store);
      expect(await store.inputResponses(id)).toStrictEqual({});
      await store.requireInput(id, ask('approval'));
      await store.applyInputResponses(id, { approval: accept({ approved: true, note: 'ok ✓' }) });
      await store.requireInput(id, ask('region', 'zone'));
      await store.applyInputResponses(id, { region: { action: 'decline' }, stray: accept() });
      await store.applyInputResponses(id, { zone: { action: 'cancel', _meta: { why: 'n/a' } } });
      const expected = {
        approval: accept({ approved: true, note: 'ok ✓' }),
        region: { action: 'decline' },
        zone: { action: 'cancel', _meta: { why: 'n/a' } },
      };
      expect(await store.inputResponses(id)).toStrictEqual(expected);
      expect((await store.resumeContext(id))?.inputResponses).toStrictEqual(expected);

      // A finished task still reports what it was told.
      await finish(store, id, 'complete');
      expect(await store.inputResponses(id)).toStrictEqual(expected);
    });

    it('requests and answers come back in code-point order of their keys, whatever order they were given in', async () => {
      const store = await open();
      const { id } = await createTask(store);
      // Code-point order, as tower-mcp's BTreeMap gives: U+E000 sorts before U+1F600 (whose UTF-16
      // units start at U+D83D), and a key before a longer one it starts.
      const given = ['zone', '\u{1F600}', 'a', '\uE000', 'ab', 'B'];
      const ordered = ['B', 'a', 'ab', 'zone', '\uE000', '\u{1F600}'];
      expect(await store.requireInput(id, ask(...given))).toBe(true);
      expect(Object.keys((await store.outstandingInputRequests(id))!)).toStrictEqual(ordered);
      const applied = await store.applyInputResponses(id, answers(...given.slice(0, 3), 'unknown'));
      expect(applied).toStrictEqual({ accepted: ['a', 'zone', '\u{1F600}'], ignored: ['unknown'], stillOutstanding: ['B', 'ab', '\uE000'], complete: false });
      expect(await store.applyInputResponses(id, answers(...given.slice(3)))).toMatchObject({ complete: true });
      expect(Object.keys((await store.inputResponses(id))!)).toStrictEqual(ordered);
      expect(Object.keys((await store.resumeContext(id))!.inputResponses)).toStrictEqual(ordered);
    });

    it('resumeContext returns the tool, its original arguments, every answer so far, and the task\'s own token', async () => {
      const store = await open();
      const { taskId: id, token } = await store.createTask({ toolName: 'deploy', arguments: { service: 'api' }, ttlMs: 60_000 });
      await store.requireInput(id, ask('approval'));
      await store.applyInputResponses(id, answers('approval'));
      await store.requireInput(id, ask('region'));
      await store.applyInputResponses(id, answers('region'));

      const resume = await store.resumeContext(id);
      expect(resume).not.toBeNull();
      expect(resume!.toolName).toBe('deploy');
      expect(resume!.arguments).toStrictEqual({ service: 'api' });
      expect(resume!.inputResponses).toStrictEqual(answers('approval', 'region'));
      expect(Object.keys(resume!.inputResponses).sort()).toStrictEqual(['approval', 'region']);
      expect(await store.inputResponses(id)).toStrictEqual(answers('approval', 'region'));

      expect(resume!.token.isCancelled).toBe(false);
      await store.cancelTask(id);
      expect(token.isCancelled).toBe(true);
      expect(resume!.token.isCancelled, 'the resume token is the task\'s cancellation domain').toBe(true);
      expect(resume!.token.signal.aborted).toBe(true);
    });
  });
}
