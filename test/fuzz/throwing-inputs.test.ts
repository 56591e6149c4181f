/**
 * A caller's own error is never a database error (the README's guarantees, "Bad input"): inputs
 * whose reading runs caller code that throws (a getter, a Proxy's `get`, `ownKeys`,
 * `getOwnPropertyDescriptor` or `getPrototypeOf` trap, a `toJSON`), or that read differently the
 * second time, are generated at every place a value can sit in every method, on both stores.
 * Both give the same outcome: `invalid_input` naming the field whose read threw, with the caller's
 * error as `cause`, and nothing changed; or, for a value that changes between reads, the value as
 * first read, alike. Never `backend`, never the raw error, and no pooled connection left out.
 */
import fc from 'fast-check';
import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import { TaskStoreError, type TaskStore } from '../../src/index.js';
import { useStorePair, type Side, type StorePair } from '../support/differential.js';
import { tableContents } from '../support/table-contents.js';
import { eventually } from '../support/time.js';
import { useNoUnhandledErrors } from '../support/unhandled-errors.js';
import { CallerBug, changingValue, THROWING_VALUES, THROWS_AT } from './hostile-values.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 25) * 8;
useNoUnhandledErrors();
const stores = useStorePair();

/** Valid on its first read, invalid (a NUL) on every later one: kept as first read, or refused, alike. */
const CHANGING = 'a value that changes between reads';
const HOSTILE: Record<string, () => unknown> = { ...THROWING_VALUES, [CHANGING]: () => changingValue('step', 'first', '\u0000 later') };

/** Puts the hostile value `depth` containers down, inside otherwise plain JSON; returns the path to it too. */
function nest(value: unknown, depth: number): { value: unknown; path: string[] } {
  let nested = value;
  const path: string[] = [];
  for (let level = 0; level < depth; level++) {
    nested = level % 2 ? [nested] : { inner: nested };
    path.unshift(level % 2 ? '0' : 'inner');
  }
  return { value: nested, path };
}

type Target = 'working' | 'awaiting';
interface Place {
  method: string;
  /** The task the call is about, if any. */
  target: Target | null;
  /** The field the hostile value sits in, as an error message names it. */
  field: string;
  args(hostile: unknown): unknown[];
}
const place = (method: string, target: Target | null, field: string, args: (h: unknown) => unknown[]): Place => ({ method, target, field, args });
const elicit = (params: unknown) => ({ method: 'elicitation/create', params });

/** Every place a caller's value can sit, in every method; `h` is the hostile value, nested or not. */
const PLACES: Record<string, Place> = Object.fromEntries(
  [
    place('createTask', null, 'input', (h) => [h]),
    place('createTask', null, 'input.toolName', (h) => [{ toolName: h }]),
    place('createTask', null, 'input.arguments', (h) => [{ toolName: 't', arguments: h }]),
    place('createTask', null, 'input.owner', (h) => [{ toolName: 't', owner: h }]),
    place('createTask', null, 'input.ttlMs', (h) => [{ toolName: 't', ttlMs: h }]),
    place('requireInput', 'working', 'requests', (h) => [h]),
    place('requireInput', 'working', 'requests.k', (h) => [{ k: h }]),
    place('requireInput', 'working', 'requests.k.params', (h) => [{ k: elicit(h) }]),
    place('requireInput', 'working', 'requests.k.params.p', (h) => [{ k: elicit({ p: h }) }]),
    place('requireInput', 'working', 'message', (h) => [{ k: elicit({}) }, h]),
    place('applyInputResponses', 'awaiting', 'responses', (h) => [h]),
    place('applyInputResponses', 'awaiting', 'responses.a', (h) => [{ a: h }]),
    place('applyInputResponses', 'awaiting', 'responses.a.content.c', (h) => [{ a: { action: 'accept', content: { c: h } } }]),
    place('setTaskMeta', 'working', 'meta', (h) => [h]),
    place('setTaskMeta', 'working', 'meta.m', (h) => [{ m: h }]),
    place('completeTask', 'working', 'result', (h) => [h]),
    place('completeTask', 'working', 'result.content.0', (h) => [{ content: [h] }]),
    place('completeTask', 'working', 'result.structuredContent', (h) => [{ content: [], structuredContent: h }]),
    place('failTask', 'working', 'error', (h) => [h]),
    place('failTask', 'working', 'error.data', (h) => [{ code: 1, message: 'm', data: h }]),
    place('setStatus', 'working', 'status', (h) => [h]),
    place('setStatus', 'working', 'message', (h) => ['working', h]),
    place('cancelTask', 'working', 'reason', (h) => [h]),
    place('setTtl', 'working', 'ttlMs', (h) => [h]),
    place('listTasks', null, 'options', (h) => [h]),
    place('listTasks', null, 'options.owner', (h) => [{ owner: h }]),
    place('waitForCompletion', 'working', 'options', (h) => [h]),
    place('waitForCompletion', 'working', 'options.signal', (h) => [{ signal: h }]),
    place('watchTasks', null, 'taskIds.0', (h) => [[h], () => {}]),
    ...(['getTask', 'getTaskResult', 'taskOwner', 'taskPresence', 'outstandingInputRequests', 'inputResponses', 'resumeContext', 'discardTask'] as const).map(
      (method) => place(method, null, 'taskId', (h) => [h]),
    ),
  ].map((p) => [`${p.method} ${p.field}`, p]),
);

async function seeded(): Promise<{ pair: StorePair; ids: Record<Side, Record<Target, string>> }> {
  const pair = await stores.fresh();
  const ids = {} as Record<Side, Record<Target, string>>;
  for (const side of ['memory', 'postgres'] as const) {
    const store = pair.store(side);
    const working = (await store.createTask({ toolName: 'seed', ttlMs: 600_000 })).taskId;
    const awaiting = (await store.createTask({ toolName: 'seed', ttlMs: 600_000 })).taskId;
    await store.requireInput(awaiting, { a: { method: 'roots/list' } });
    ids[side] = { working, awaiting };
  }
  return { pair, ids };
}

type Seen = { value: unknown } | { kind: string; message: string; causeIsTheCallers: boolean } | { raw: string };

async function attempt(store: TaskStore, method: string, args: unknown[]): Promise<Seen> {
  try {
    const value = await (store as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>)[method]!(...args);
    if (method === 'watchTasks') (value as { close(): void }).close();
    if (method === 'createTask') return { value: 'created' };
    if (method === 'listTasks') return { value: (value as { tasks: unknown[] }).tasks.length };
    return { value: value === null ? null : typeof value };
  } catch (error) {
    if (!(error instanceof TaskStoreError)) return { raw: String(error) };
    return { kind: error.kind, message: error.message, causeIsTheCallers: error.cause instanceof CallerBug };
  }
}

/** What each store shows of its tasks, ids and times left out, in an order of their own (tasks created in one millisecond may list either way). */
async function shown(pair: StorePair, side: Side): Promise<unknown> {
  const store = pair.store(side);
  const { tasks } = await store.listTasks();
  const each = await Promise.all(
    tasks.map(async ({ taskId }) => {
      const snapshot = await store.getTaskResult(taskId);
      const { taskId: _id, createdAt: _c, lastUpdatedAt: _u, ...task } = snapshot!.task;
      const extra = { requests: await store.outstandingInputRequests(taskId), answers: await store.inputResponses(taskId) };
      return { task, result: snapshot!.result, error: snapshot!.error, ...extra };
    }),
  );
  return each.map(canonical).sort();
}

/** JSON with every object's keys sorted: the stores order a task's fields differently. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, item: unknown) =>
    item && typeof item === 'object' && !Array.isArray(item) ? Object.fromEntries(Object.entries(item).sort(([a], [b]) => (a < b ? -1 : 1))) : item,
  );
}

function poolOf(pair: StorePair): pg.Pool {
  return (pair.postgres as unknown as { pool: pg.Pool }).pool;
}

/**
 * invalid_input: a read that threw names exactly where (the key of the hostile value at
 * `hostilePath`, or the value itself) with the caller's error as cause; any other refusal names a
 * field of the argument (the value's, or one it leaves out).
 */
function expectRefusal(outcome: { kind: string; message: string; causeIsTheCallers: boolean }, where: string, hostilePath: string, kind: string): void {
  expect(outcome.kind, `${where}: ${outcome.message}`).toBe('invalid_input');
  const named = namedField(outcome.message);
  if (outcome.message.includes('reading it threw')) {
    expect(named, where).toBe(THROWS_AT[kind] ? `${hostilePath}.${THROWS_AT[kind]}` : hostilePath);
    expect(outcome.causeIsTheCallers, `${where}: the cause`).toBe(true);
  } else {
    const argument = hostilePath.split('.')[0]!;
    expect(named === argument || named.startsWith(`${argument}.`), `${where}: names ${named}`).toBe(true);
  }
}

/** The field an `invalid <field>: …` message names. */
function namedField(message: string): string {
  return /^invalid (.*?): /.exec(message)?.[1] ?? `(no field in "${message}")`;
}

describe('inputs whose reading throws or changes, on both stores', () => {
  it('are refused alike with invalid_input naming the field, the caller’s error as cause, and change nothing; or kept as first read, alike', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...Object.keys(HOSTILE)), fc.constantFrom(...Object.keys(PLACES)), fc.nat(3), async (kind, placeName, depth) => {
        const spot = PLACES[placeName]!;
        const where = `${kind} at ${placeName}, ${depth} levels down`;
        const { pair, ids } = await seeded();
        const tables = await tableContents(stores.admin, stores.schema);
        const before = { memory: await shown(pair, 'memory'), postgres: await shown(pair, 'postgres') };
        const outcomes = {} as Record<Side, Seen>;
        let path: string[] = [];
        for (const side of ['memory', 'postgres'] as const) {
          const hostile = nest(HOSTILE[kind]!(), depth);
          path = hostile.path;
          const target = spot.target ? [ids[side][spot.target]] : [];
          outcomes[side] = await attempt(pair.store(side), spot.method, [...target, ...spot.args(hostile.value)]);
        }
        expect(outcomes.postgres, `${where}: the stores disagree`).toStrictEqual(outcomes.memory);
        const outcome = outcomes.memory;
        expect('raw' in outcome ? outcome : null, `${where}: the caller’s error escaped raw`).toBeNull();
        if ('kind' in outcome) {
          expectRefusal(outcome, where, [spot.field, ...path].join('.'), kind);
          expect(await tableContents(stores.admin, stores.schema), `${where}: the tables changed`).toStrictEqual(tables);
          expect(await shown(pair, 'memory'), `${where}: the memory store changed`).toStrictEqual(before.memory);
        } else {
          // Accepted: only a value that reads fine the first time, or an options object whose
          // trap no field reading reaches; whatever was kept, both kept the same, as first read.
          expect(kind === CHANGING || ['listTasks', 'waitForCompletion'].includes(spot.method), `${where}: accepted ${JSON.stringify(outcome)}`).toBe(true);
          const kept = { memory: await shown(pair, 'memory'), postgres: await shown(pair, 'postgres') };
          expect(kept.postgres, `${where}: the stores keep different values`).toStrictEqual(kept.memory);
          expect(JSON.stringify(kept.memory), `${where}: a later read was kept`).not.toContain('later');
        }
        // An accepted wait flags its task in the background; nothing may keep a connection after that.
        const pool = poolOf(pair);
        await eventually(`${where}: every connection back in the pool`, async () => pool.totalCount - pool.idleCount === 0, 2_000);
      }),
      { numRuns: RUNS },
    );
  });

  it('every place is tried with every kind of hostile value on both stores at least once', async () => {
    // The generated property samples; this walks the whole grid once, flat, checking only the
    // invariants that need no reading of the tables: same outcome, never raw, refusals as above.
    const { pair, ids } = await seeded();
    for (const [placeName, spot] of Object.entries(PLACES)) {
      for (const kind of Object.keys(HOSTILE)) {
        const outcomes = {} as Record<Side, Seen>;
        for (const side of ['memory', 'postgres'] as const) {
          // Terminal methods would end the seeded task: a fresh one each time.
          const target = spot.target ? [await freshTarget(pair.store(side), spot.target, ids[side][spot.target])] : [];
          outcomes[side] = await attempt(pair.store(side), spot.method, [...target, ...spot.args(HOSTILE[kind]!())]);
        }
        const where = `${kind} at ${placeName}`;
        expect(outcomes.postgres, `${where}: the stores disagree`).toStrictEqual(outcomes.memory);
        expect(outcomes.memory, `${where}: never raw`).not.toHaveProperty('raw');
        if ('kind' in outcomes.memory) expectRefusal(outcomes.memory, where, spot.field, kind);
      }
    }
    const pool = poolOf(pair);
    await eventually('every connection back in the pool', async () => pool.totalCount - pool.idleCount === 0, 2_000);
  });
});

/** The seeded task while it is still in play, else a new one in the same state. */
async function freshTarget(store: TaskStore, target: Target, seededId: string): Promise<string> {
  if (target === 'working' && (await store.getTask(seededId))?.status === 'working') return seededId;
  if (target === 'awaiting' && (await store.outstandingInputRequests(seededId))?.a) return seededId;
  const { taskId } = await store.createTask({ toolName: 'seed', ttlMs: 600_000 });
  if (target === 'awaiting') await store.requireInput(taskId, { a: { method: 'roots/list' } });
  return taskId;
}
