/**
 * A caller's own error is never a database error (the README's guarantees, "Bad input"): inputs
 * whose reading runs caller code that throws (a getter, a Proxy's `get`, `ownKeys`,
 * `getOwnPropertyDescriptor` or `getPrototypeOf` trap, a `toJSON`), or that reads differently
 * the second time, are generated at every place a value can sit in every method that takes one,
 * on both stores. Both give the same outcome: `invalid_input` naming the field, with the caller's
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

const RUNS = Number(process.env.FUZZ_RUNS ?? 25) * 8;
useNoUnhandledErrors();
const stores = useStorePair();

class CallerBug extends Error {
  override name = 'CallerBug';
}

/** Each builds a fresh value, since some change as they are read. */
const TRAPS = {
  'a throwing getter': () => Object.defineProperty({ fine: 1 }, 'boom', { enumerable: true, get: () => { throw new CallerBug('getter boom'); } }),
  'a proxy whose get throws': () => new Proxy({ a: 1 }, { get: () => { throw new CallerBug('get trap boom'); } }),
  'a proxy whose ownKeys throws': () => new Proxy({ a: 1 }, { ownKeys: () => { throw new CallerBug('ownKeys trap boom'); } }),
  'a proxy whose getOwnPropertyDescriptor throws': () =>
    new Proxy({ a: 1 }, { getOwnPropertyDescriptor: () => { throw new CallerBug('descriptor trap boom'); } }),
  'a proxy whose getPrototypeOf throws': () => new Proxy({ a: 1 }, { getPrototypeOf: () => { throw new CallerBug('prototype trap boom'); } }),
  'a toJSON that throws': () => ({ toJSON: () => { throw new CallerBug('toJSON boom'); } }),
  'a getter toJSON that throws': () => Object.defineProperty({}, 'toJSON', { enumerable: true, get: () => { throw new CallerBug('toJSON getter boom'); } }),
} as const;
/** Valid on its first read, invalid on every later one: stored as first read, or refused, alike. */
const changing = () => {
  let reads = 0;
  return Object.defineProperty({}, 'step', { enumerable: true, get: () => (reads++ === 0 ? 'first' : '\u0000 later') });
};
type Hostile = () => unknown;

/** Puts the hostile value `depth` containers down, inside otherwise plain JSON. */
function nest(value: unknown, depth: number): unknown {
  let nested = value;
  for (let level = 0; level < depth; level++) nested = level % 2 ? [nested] : { inner: nested };
  return nested;
}

type Target = 'working' | 'awaiting';
interface Place {
  method: keyof TaskStore;
  target: Target | null;
  args(hostile: unknown): unknown[];
}
/** Every place a caller's value can sit; `h` is the hostile value, nested or not. */
const PLACES: Record<string, Place> = {
  'createTask input': { method: 'createTask', target: null, args: (h) => [h] },
  'createTask arguments': { method: 'createTask', target: null, args: (h) => [{ toolName: 't', arguments: h }] },
  'requireInput requests': { method: 'requireInput', target: 'working', args: (h) => [{ k: h }] },
  'requireInput params': { method: 'requireInput', target: 'working', args: (h) => [{ k: { method: 'elicitation/create', params: { p: h } } }] },
  'applyInputResponses answers': { method: 'applyInputResponses', target: 'awaiting', args: (h) => [h] },
  'applyInputResponses answer content': { method: 'applyInputResponses', target: 'awaiting', args: (h) => [{ a: { action: 'accept', content: { c: h } } }] },
  'setTaskMeta meta': { method: 'setTaskMeta', target: 'working', args: (h) => [{ m: h }] },
  'completeTask result': { method: 'completeTask', target: 'working', args: (h) => [h] },
  'completeTask content': { method: 'completeTask', target: 'working', args: (h) => [{ content: [h] }] },
  'failTask error': { method: 'failTask', target: 'working', args: (h) => [h] },
  'failTask data': { method: 'failTask', target: 'working', args: (h) => [{ code: 1, message: 'm', data: h }] },
  'listTasks options': { method: 'listTasks', target: null, args: (h) => [h] },
  'waitForCompletion options': { method: 'waitForCompletion', target: 'working', args: (h) => [h] },
};

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

async function attempt(store: TaskStore, method: keyof TaskStore, args: unknown[]): Promise<Seen> {
  try {
    const value = await (store as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>)[method]!(...args);
    return { value: method === 'createTask' ? 'created' : method === 'listTasks' ? (value as { tasks: unknown[] }).tasks.length : value === null ? null : typeof value };
  } catch (error) {
    if (!(error instanceof TaskStoreError)) return { raw: String(error) };
    return { kind: error.kind, message: error.message, causeIsTheCallers: error.cause instanceof CallerBug };
  }
}

/** What each store shows of the seeded tasks, ids left out. */
async function shown(pair: StorePair, ids: Record<Side, Record<Target, string>>, side: Side): Promise<unknown> {
  const store = pair.store(side);
  return Promise.all(
    (['working', 'awaiting'] as const).map(async (target) => {
      const snapshot = await store.getTaskResult(ids[side][target]);
      const { taskId: _id, createdAt: _c, lastUpdatedAt: _u, ...task } = snapshot!.task;
      return { task, result: snapshot!.result, error: snapshot!.error, meta: snapshot!.task._meta, requests: await store.outstandingInputRequests(ids[side][target]) };
    }),
  );
}

function poolOf(pair: StorePair): pg.Pool {
  return (pair.postgres as unknown as { pool: pg.Pool }).pool;
}

describe('inputs whose reading throws, on both stores', () => {
  it('are refused alike with invalid_input naming the field, the caller’s error as cause, and change nothing', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...Object.keys(TRAPS)), fc.constantFrom(...Object.keys(PLACES)), fc.nat(3), async (trap, placeName, depth) => {
        const place = PLACES[placeName]!;
        const where = `${trap} in ${placeName}, ${depth} levels down`;
        const { pair, ids } = await seeded();
        const tables = await tableContents(stores.admin, stores.schema);
        const memoryBefore = await shown(pair, ids, 'memory');
        const outcomes: Record<Side, Seen> = {} as never;
        for (const side of ['memory', 'postgres'] as const) {
          const hostile = nest((TRAPS[trap as keyof typeof TRAPS] as Hostile)(), depth);
          const target = place.target ? [ids[side][place.target]] : [];
          outcomes[side] = await attempt(pair.store(side), place.method, [...target, ...place.args(hostile)]);
        }
        expect(outcomes.postgres, `${where}: the stores disagree`).toStrictEqual(outcomes.memory);
        const outcome = outcomes.memory;
        expect('raw' in outcome ? outcome : null, `${where}: the caller’s error escaped raw`).toBeNull();
        if ('kind' in outcome) {
          expect(outcome.kind, `${where}: ${outcome.message}`).toBe('invalid_input');
          if (outcome.message.includes('reading it threw')) expect(outcome.causeIsTheCallers, `${where}: the cause`).toBe(true);
        } else {
          // Only an options object whose trap no field reading reaches can be accepted.
          expect(['listTasks', 'waitForCompletion'], `${where}: accepted ${JSON.stringify(outcome)}`).toContain(place.method);
        }
        if ('kind' in outcome || place.method === 'listTasks') {
          expect(await tableContents(stores.admin, stores.schema), `${where}: the tables changed`).toStrictEqual(tables);
          expect(await shown(pair, ids, 'memory'), `${where}: the memory store changed`).toStrictEqual(memoryBefore);
        }
        // An accepted wait flags its task in the background; nothing may keep a connection after that.
        const pool = poolOf(pair);
        await eventually(`${where}: every connection back in the pool`, async () => pool.totalCount - pool.idleCount === 0, 2_000);
      }),
      { numRuns: RUNS },
    );
  });

  it('read a value that changes between reads once: both keep what the first read gave, or refuse it alike', async () => {
    for (const placeName of ['setTaskMeta meta', 'completeTask result', 'failTask data', 'applyInputResponses answer content']) {
      const place = PLACES[placeName]!;
      const { pair, ids } = await seeded();
      const outcomes: Record<Side, Seen> = {} as never;
      for (const side of ['memory', 'postgres'] as const) {
        const target = place.target ? [ids[side][place.target]] : [];
        outcomes[side] = await attempt(pair.store(side), place.method, [...target, ...place.args(changing())]);
      }
      expect(outcomes.postgres, `${placeName}: the stores disagree`).toStrictEqual(outcomes.memory);
      expect(await shown(pair, ids, 'postgres'), `${placeName}: the stores keep different values`).toStrictEqual(await shown(pair, ids, 'memory'));
      const stored = JSON.stringify(await shown(pair, ids, 'memory'));
      expect(stored, `${placeName}: a later read was stored`).not.toContain('later');
    }
  });
});
