/**
 * Fuzzing every TaskStore method with hostile arguments (hostile-values.ts) on both stores at once.
 * For every call:
 *   - nothing but a TaskStoreError is ever thrown, and never a `backend` one (no fault is injected);
 *   - both stores answer alike: the same value, or the same kind of error;
 *   - a call refused with `invalid_input` changes nothing: every table row in PostgreSQL and
 *     everything the memory store shows are as before;
 *   - a call that did something left both stores in the same observable state;
 *   - no rejection or exception goes unhandled.
 *
 * FUZZ_RUNS (default 25) sets the calls per method; raise it for a long run.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { CancellationToken, TaskStore } from '../../src/index.js';
import { isCrash, outcomeOf, useStorePair, type Outcome, type Side, type StorePair } from '../support/differential.js';
import { tableContents } from '../support/table-contents.js';
import { useNoUnhandledErrors } from '../support/unhandled-errors.js';
import { sleep } from '../support/time.js';
import {
  anyHostile,
  awkwardJson,
  deepJson,
  HUGE_STRING,
  hostileNumber,
  hostileString,
  hostileTaskId,
  notJson,
  protoKeyObjects,
} from './hostile-values.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 25);

useNoUnhandledErrors();
const stores = useStorePair();

// -- Seeded state ----------------------------------------------------------------------------------

/** Stands for one of the seeded tasks; each store gets its own id for it. */
class Seeded {
  constructor(readonly index: 0 | 1 | 2) {}
}
/** The tasks every call may aim at: working, input_required (key `a` outstanding, `b` spent), completed. */
const WORKING = new Seeded(0);
const AWAITING_INPUT = new Seeded(1);
const COMPLETED = new Seeded(2);

let state: StorePair | null = null;

/** The seeded pair, made again after a call that changed something. */
async function seededPair(): Promise<StorePair> {
  if (state) return state;
  const pair = await stores.fresh();
  const created = { memory: [], postgres: [] } as Record<Side, { taskId: string; token: CancellationToken }[]>;
  for (const side of ['memory', 'postgres'] as const) {
    const store = pair.store(side);
    for (let i = 0; i < 3; i++) {
      created[side].push(await store.createTask({ toolName: 'fuzz', arguments: { i }, owner: 'alice' }));
      // Each task in a millisecond of its own: within one, listings order by id, which the stores draw differently.
      await sleep(2);
    }
    const [, awaiting, completed] = created[side].map((task) => task.taskId);
    await store.requireInput(awaiting!, { a: { method: 'roots/list' }, b: { method: 'roots/list' } });
    await store.applyInputResponses(awaiting!, { b: { roots: [] } });
    await store.requireInput(awaiting!, { a: { method: 'roots/list' } });
    await store.completeTask(completed!, { content: [{ type: 'text', text: 'done' }] });
  }
  for (let i = 0; i < 3; i++) pair.pair(created.memory[i]!, created.postgres[i]!);
  state = pair;
  return pair;
}

function resolveArgs(pair: StorePair, side: Side, args: unknown[]): unknown[] {
  return args.map((arg) => (arg instanceof Seeded ? pair.idOn(side, pair.tasks[arg.index]!) : arg));
}

/** Everything either store shows about every task it holds, by label. */
async function observable(pair: StorePair, side: Side): Promise<unknown> {
  const store = pair.store(side);
  const listed = [];
  let cursor: string | undefined;
  do {
    const page = await store.listTasks({ limit: 1000, ...(cursor === undefined ? {} : { cursor }) });
    listed.push(...page.tasks);
    cursor = page.nextCursor ?? undefined;
  } while (cursor !== undefined);
  const ids = [...new Set([...pair.tasks.map((task) => pair.idOn(side, task)), ...listed.map((task) => task.taskId)])];
  const tasks = await Promise.all(
    ids.map(async (id) => {
      const [presence, snapshot, outstanding, responses] = await Promise.all([
        store.taskPresence(id),
        store.getTaskResult(id),
        store.outstandingInputRequests(id),
        store.inputResponses(id),
      ]);
      return { taskId: id, presence, snapshot, outstanding, responses };
    }),
  );
  return pair.normalize({ listed: listed.map((task) => pair.label(task.taskId)).sort(), tasks: tasks.sort(byLabel(pair)) });
}

function byLabel(pair: StorePair) {
  return (a: { taskId: string }, b: { taskId: string }) => {
    const [x, y] = [pair.label(a.taskId), pair.label(b.taskId)];
    return x < y ? -1 : x > y ? 1 : 0;
  };
}

// -- One fuzzed call ------------------------------------------------------------------------------

type Method = Exclude<keyof TaskStore, 'close'>;

/** Kinds a call may legitimately fail with here; `backend` and anything not a TaskStoreError never. */
const REFUSALS = new Set(['invalid_input', 'retention_limit_exceeded', 'invalid_transition']);

/** Methods that only read: whatever they answer, the tables must not change. */
const READS = new Set<Method>([
  'taskOwner',
  'taskPresence',
  'getTask',
  'getTaskResult',
  'waitForCompletion',
  'listTasks',
  'outstandingInputRequests',
  'inputResponses',
  'resumeContext',
]);

async function fuzzCall(method: Method, args: unknown[]): Promise<void> {
  const pair = await seededPair();
  const where = `${method}(${describeArgs(args)})`;
  const tablesBefore = await tableContents(stores.admin, stores.schema);
  const memoryBefore = await observable(pair, 'memory');

  // An aborted signal makes a wait reject with the signal's reason: that is the contract.
  const abortReason = method === 'waitForCompletion' ? signalReason(args[1]) : undefined;
  const call = async (side: Side): Promise<Outcome> => {
    const outcome = await outcomeOf(async () => {
      try {
        return await (pair.store(side) as unknown as Record<Method, (...a: unknown[]) => unknown>)[method](...resolveArgs(pair, side, args));
      } catch (error) {
        if (abortReason !== undefined && error === abortReason) return 'rejected with the signal’s reason';
        throw error;
      }
    });
    return outcome;
  };
  // Until this call is shown to have changed nothing, the next one starts from fresh stores.
  state = null;
  const memory = await call('memory');
  const postgres = await call('postgres');

  for (const [side, outcome] of [['memory', memory], ['postgres', postgres]] as const) {
    expect(isCrash(outcome) ? outcome : null, `${where}: ${side} threw something other than a TaskStoreError`).toBeNull();
    if ('error' in outcome) expect(REFUSALS.has(outcome.error), `${where}: ${side} failed with ${outcome.error}`).toBe(true);
    // A new task's id is each store's own: compare whether it was made, and its token.
    if (method === 'createTask' && 'value' in outcome) {
      outcome.value = { created: true, tokenRaised: (outcome.value as { token: CancellationToken }).token.isCancelled };
    }
  }
  expect(pair.normalize(postgres), `${where}: the stores answer differently`).toStrictEqual(pair.normalize(memory));

  const refused = 'error' in memory && 'error' in postgres;
  if (READS.has(method) || (refused && (memory.error === 'invalid_input' || method === 'createTask'))) {
    expect(await tableContents(stores.admin, stores.schema), `${where}: the tables changed`).toStrictEqual(tablesBefore);
    expect(await observable(pair, 'memory'), `${where}: the memory store changed`).toStrictEqual(memoryBefore);
    state = pair;
    return;
  }
  // The call did something: both stores must now show the same.
  if (method === 'createTask' && 'value' in memory) await pairNewest(pair);
  expect(await observable(pair, 'postgres'), `${where}: the stores differ afterwards`).toStrictEqual(await observable(pair, 'memory'));
}

/** Labels the task a successful createTask just made on each store (the newest one listed). */
async function pairNewest(pair: StorePair): Promise<void> {
  const newest = async (side: Side) => {
    const known = new Set(pair.tasks.map((task) => pair.idOn(side, task)));
    const { tasks } = await pair.store(side).listTasks({ limit: 1000 });
    return tasks.find((task) => !known.has(task.taskId));
  };
  const [memory, postgres] = [await newest('memory'), await newest('postgres')];
  if (memory && postgres) pair.pair({ taskId: memory.taskId, token: null as never }, { taskId: postgres.taskId, token: null as never });
}

function signalReason(options: unknown): unknown {
  const signal = (options as { signal?: unknown } | null | undefined)?.signal;
  return signal instanceof AbortSignal && signal.aborted ? signal.reason : undefined;
}

function describeArgs(args: unknown[]): string {
  return args
    .map((arg) => {
      if (arg instanceof Seeded) return ['WORKING', 'AWAITING_INPUT', 'COMPLETED'][arg.index];
      try {
        const text = fc.stringify(arg);
        return text.length > 200 ? `${text.slice(0, 200)}… (${text.length} chars)` : text;
      } catch {
        return String(arg);
      }
    })
    .join(', ');
}

// -- Arbitraries per parameter ---------------------------------------------------------------------

const anyTask = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom<unknown>(WORKING, AWAITING_INPUT, COMPLETED) },
  { weight: 2, arbitrary: hostileTaskId },
);
const optional = <T>(arbitrary: fc.Arbitrary<T>) => fc.option(arbitrary, { nil: undefined });
const jsonish = fc.oneof(awkwardJson, deepJson, protoKeyObjects, notJson, fc.constant(HUGE_STRING));
const objectish = fc.oneof(
  { weight: 2, arbitrary: fc.dictionary(hostileString, fc.oneof(awkwardJson, deepJson, notJson), { maxKeys: 3 }) },
  { weight: 1, arbitrary: anyHostile },
  { weight: 1, arbitrary: protoKeyObjects },
  { weight: 1, arbitrary: fc.constant({ big: HUGE_STRING }) },
);
const statusLike = fc.oneof(fc.constantFrom('working', 'input_required', 'completed', 'failed', 'cancelled', 'WORKING', 'unknown'), hostileString, anyHostile);
const message = fc.oneof(optional(fc.constantFrom(null, 'a message')), hostileString, anyHostile);
// No short positive TTL: whether a task expired by the next look would be a race with the clock.
const ttl = fc
  .oneof(fc.constantFrom(0, 600_000, 3_600_000, null), hostileNumber, anyHostile)
  .filter((value) => !(typeof value === 'number' && value > 0 && value < 600_000));
const requests = fc.oneof(
  fc.dictionary(
    fc.oneof(fc.constantFrom('a', 'b', 'c'), hostileString),
    fc.oneof(
      fc.constantFrom({ method: 'roots/list' }, { method: 'elicitation/create', params: {} }, { method: 'sampling/createMessage' }),
      fc.record({ method: fc.oneof(fc.constantFrom('elicitation/create', 'roots/list', 'tools/call'), hostileString), params: objectish }, { requiredKeys: ['method'] }),
      anyHostile,
    ),
    { maxKeys: 3 },
  ),
  objectish,
);
const responses = fc.oneof(
  fc.dictionary(fc.oneof(fc.constantFrom('a', 'b', 'z'), hostileString), fc.oneof(fc.constant({ action: 'accept' }), objectish), { maxKeys: 3 }),
  objectish,
);
const toolResult = fc.oneof(
  fc.record(
    {
      content: fc.oneof(fc.array(fc.oneof(awkwardJson, jsonish), { maxLength: 2 }), anyHostile),
      isError: fc.oneof(fc.boolean(), anyHostile),
      structuredContent: objectish,
      _meta: objectish,
      extra: jsonish,
    },
    { requiredKeys: ['content'] },
  ),
  anyHostile,
);
const rpcError = fc.oneof(
  fc.record(
    { code: fc.oneof(fc.integer(), hostileNumber, anyHostile), message: fc.oneof(hostileString, anyHostile), data: jsonish, extra: fc.constant(1) },
    { requiredKeys: ['code', 'message'] },
  ),
  anyHostile,
);
const createInput = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record(
      {
        toolName: fc.oneof(fc.constant('tool'), hostileString, anyHostile),
        arguments: fc.oneof(awkwardJson, jsonish),
        ttlMs: ttl,
        owner: fc.oneof(fc.constantFrom(null, '', 'alice'), hostileString, anyHostile),
        pollIntervalMs: fc.oneof(fc.constantFrom(0, 1000), hostileNumber, anyHostile),
        taskId: fc.constant('f'.repeat(32)),
        status: fc.constant('completed'),
      },
      { requiredKeys: ['toolName'] },
    ),
  },
  { weight: 1, arbitrary: anyHostile },
);
const listOptions = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record(
      {
        status: statusLike,
        owner: fc.oneof(fc.constantFrom(null, '', 'alice'), hostileString, anyHostile),
        cursor: fc.oneof(hostileString, anyHostile),
        limit: fc.oneof(fc.constantFrom(1, 1000, 1001, 0), hostileNumber, anyHostile),
        offset: fc.constant(1),
      },
      { requiredKeys: [] },
    ),
  },
  { weight: 1, arbitrary: anyHostile },
);
const waitOptions = fc.oneof(
  fc.constantFrom<unknown>(undefined, null, {}, { signal: undefined }, { signal: null }, { signal: 'aborted' }, { signal: { aborted: true } }, { timeout: 1 }),
  fc.constant(null).map(() => ({ signal: AbortSignal.abort(new Error('fuzz abort')) })),
  anyHostile,
);

/** The arguments of every method. A wait's task is never one that would keep it pending. */
const METHOD_ARGUMENTS: Record<Method, fc.Arbitrary<unknown[]>> = {
  createTask: fc.tuple(createInput),
  taskOwner: fc.tuple(anyTask),
  taskPresence: fc.tuple(anyTask),
  getTask: fc.tuple(anyTask),
  getTaskResult: fc.tuple(anyTask),
  waitForCompletion: fc.tuple(fc.oneof(fc.constant(COMPLETED), hostileTaskId), waitOptions),
  listTasks: fc.tuple(listOptions),
  requireInput: fc.tuple(anyTask, requests, message),
  outstandingInputRequests: fc.tuple(anyTask),
  applyInputResponses: fc.tuple(anyTask, responses),
  inputResponses: fc.tuple(anyTask),
  resumeContext: fc.tuple(anyTask),
  setStatus: fc.tuple(anyTask, statusLike, message),
  setTtl: fc.tuple(anyTask, ttl),
  setTaskMeta: fc.tuple(anyTask, objectish),
  completeTask: fc.tuple(anyTask, toolResult),
  failTask: fc.tuple(anyTask, rpcError),
  cancelTask: fc.tuple(anyTask, message),
  discardTask: fc.tuple(anyTask),
};

describe('every method, fuzzed on both stores', () => {
  for (const [method, args] of Object.entries(METHOD_ARGUMENTS) as [Method, fc.Arbitrary<unknown[]>][]) {
    it(`${method}: refusals are invalid_input and change nothing, and both stores agree`, async () => {
      await fc.assert(
        fc.asyncProperty(args, (generated) => fuzzCall(method, generated)),
        { numRuns: RUNS, ...(process.env.FUZZ_SEED === undefined ? {} : { seed: Number(process.env.FUZZ_SEED) }) },
      );
    }, 60_000 + RUNS * 2_000);
  }

  // Found by the fuzzer: keys that name Object.prototype's members are plain JSON keys to both stores.
  it('setTaskMeta and createTask: meta and arguments keyed by the names of Object.prototype members are kept alike', async () => {
    for (const meta of [{ constructor: [] }, { toString: 1, valueOf: { constructor: 'x' } }, { __defineGetter__: null }]) {
      await fuzzCall('setTaskMeta', [WORKING, meta]);
      await fuzzCall('createTask', [{ toolName: 'echo', owner: 'alice', arguments: meta }]);
    }
  });
});
