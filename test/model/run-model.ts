/**
 * Runs a sequence of {@link Operation}s on both stores of a {@link StorePair}, one step at a time,
 * and fails at the first step where any observable answer differs: the call's result or error
 * kind, which tokens are raised, and how pending `waitForCompletion` calls end.
 */
import { expect } from 'vitest';
import type { TaskObject, TaskStore } from '../../src/index.js';
import { isCrash, outcomeOf, type Outcome, type Side, type StorePair } from '../support/differential.js';
import { BOUND_MS, within } from '../support/time.js';
import type { Operation, TaskRef } from './operations.js';

/** An issuable id that names no task in either store. */
const UNKNOWN_ID = 'e'.repeat(32);

interface TrackedWait {
  controller: AbortController;
  done: Promise<void>;
  outcome?: Outcome | { aborted: true };
}

interface PendingWait {
  where: string;
  memory: TrackedWait;
  postgres: TrackedWait;
}

export async function runOperations(pair: StorePair, operations: readonly Operation[]): Promise<void> {
  const waits: PendingWait[] = [];
  try {
    await runSteps(pair, operations, waits);
  } catch (error) {
    await abortWaits(pair, waits, { compare: false });
    throw error;
  }
  await abortWaits(pair, waits, { compare: true });
}

async function runSteps(pair: StorePair, operations: readonly Operation[], waits: PendingWait[]): Promise<void> {
  for (const [step, operation] of operations.entries()) {
    const where = `step ${step}: ${JSON.stringify(operation)}`;
    if (operation.op === 'waitForCompletion') {
      waits.push({
        where,
        memory: startWait(pair, 'memory', operation.task),
        postgres: startWait(pair, 'postgres', operation.task),
      });
    } else {
      const memory = await perform(pair, 'memory', operation);
      const postgres = await perform(pair, 'postgres', operation);
      expect(isCrash(memory) ? memory : null, `${where}: the memory store threw`).toBeNull();
      expect(isCrash(postgres) ? postgres : null, `${where}: PostgreSQL threw`).toBeNull();
      expect(isBackendError(postgres) ? postgres : null, `${where}: PostgreSQL failed with no fault injected`).toBeNull();
      if (operation.op === 'createTask' && 'value' in memory && 'value' in postgres) {
        pair.pair(memory.value as never, postgres.value as never);
      }
      expect(pair.normalize(postgres), `${where}: the answers differ`).toStrictEqual(pair.normalize(memory));
    }
    await settleWaits(pair, waits, where);
    const tokens = pair.tokenStates();
    expect(tokens.postgres, `${where}: raised tokens differ`).toStrictEqual(tokens.memory);
  }
}

function isBackendError(outcome: Outcome): boolean {
  return 'error' in outcome && outcome.error === 'backend';
}

function resolveTask(pair: StorePair, side: Side, ref: TaskRef): string {
  if ('raw' in ref) return ref.raw;
  if ('unknown' in ref || pair.tasks.length === 0) return UNKNOWN_ID;
  return pair.idOn(side, pair.tasks[ref.slot % pair.tasks.length]!);
}

/** One call on one store. Calls that return a token or page through lists are reduced to what is compared. */
async function perform(pair: StorePair, side: Side, operation: Exclude<Operation, { op: 'waitForCompletion' }>): Promise<Outcome> {
  const store = pair.store(side);
  const id = (ref: TaskRef) => resolveTask(pair, side, ref);
  const call = (): Promise<unknown> => {
    switch (operation.op) {
      case 'createTask':
        return store.createTask(operation.input as never);
      case 'taskOwner':
      case 'taskPresence':
      case 'getTask':
      case 'getTaskResult':
      case 'outstandingInputRequests':
      case 'inputResponses':
      case 'resumeContext':
      case 'discardTask':
        return (store as TaskStore)[operation.op](id(operation.task));
      case 'listTasks':
        return listEverything(store, operation.options, (taskId) => pair.label(taskId));
      case 'requireInput':
        return store.requireInput(id(operation.task), operation.requests as never, operation.message);
      case 'applyInputResponses':
        return store.applyInputResponses(id(operation.task), operation.responses as never);
      case 'setStatus':
        return store.setStatus(id(operation.task), operation.status as never, operation.message);
      case 'setTtl':
        return store.setTtl(id(operation.task), operation.ttlMs);
      case 'setTaskMeta':
        return store.setTaskMeta(id(operation.task), operation.meta);
      case 'completeTask':
        return store.completeTask(id(operation.task), operation.result as never);
      case 'failTask':
        return store.failTask(id(operation.task), operation.error as never);
      case 'cancelTask':
        return store.cancelTask(id(operation.task), operation.reason);
      case 'reapExpired':
        return pair.store(side).reapExpired();
      default:
        throw new Error(`no such operation: ${JSON.stringify(operation satisfies never)}`);
    }
  };
  return outcomeOf(call);
}

/**
 * Every page of a listing. Tasks created in the same millisecond are ordered by their ids, which
 * differ between the stores, so the comparison sees page sizes, the set of tasks, and whether this
 * store's own order was by creation time without repeats.
 */
async function listEverything(store: TaskStore, options: Record<string, unknown>, label: (taskId: string) => string) {
  const pageSizes: number[] = [];
  const tasks: TaskObject[] = [];
  let cursor: string | undefined;
  do {
    const page = await store.listTasks({ ...options, ...(cursor === undefined ? {} : { cursor }) } as never);
    pageSizes.push(page.tasks.length);
    tasks.push(...page.tasks);
    cursor = page.nextCursor ?? undefined;
    if (pageSizes.length > 100) throw new Error('listTasks kept returning a nextCursor');
  } while (cursor !== undefined);
  const inOrder = tasks.every((task, index) => index === 0 || tasks[index - 1]!.createdAt <= task.createdAt);
  const distinct = new Set(tasks.map((task) => task.taskId)).size === tasks.length;
  const byLabel = (a: TaskObject, b: TaskObject) => (label(a.taskId) < label(b.taskId) ? -1 : label(a.taskId) > label(b.taskId) ? 1 : 0);
  return { pageSizes, inCreationOrder: inOrder, distinct, tasks: tasks.sort(byLabel) };
}

function startWait(pair: StorePair, side: Side, ref: TaskRef): TrackedWait {
  const controller = new AbortController();
  const tracked: TrackedWait = { controller, done: Promise.resolve() };
  tracked.done = pair
    .store(side)
    .waitForCompletion(resolveTask(pair, side, ref), { signal: controller.signal })
    .then(
      (value) => {
        tracked.outcome = { value };
      },
      (error: unknown) => {
        tracked.outcome = error === controller.signal.reason ? { aborted: true } : outcomeOfError(error);
      },
    );
  return tracked;
}

function outcomeOfError(error: unknown): Outcome {
  return { error: (error as { kind?: never }).kind ?? (`not a TaskStoreError: ${String(error)}` as never) };
}

/**
 * The memory store settles a wait within the call that ends it; once it has, PostgreSQL's must end
 * the same way soon after (it learns through NOTIFY). A PostgreSQL wait that ends while the memory
 * store's still runs is a difference too.
 */
async function settleWaits(pair: StorePair, waits: PendingWait[], where: string): Promise<void> {
  await new Promise((resolve) => setImmediate(resolve));
  for (const wait of [...waits]) {
    if (wait.memory.outcome === undefined) {
      expect(wait.postgres.outcome, `${where}: PostgreSQL's wait from ${wait.where} ended, the memory store's did not`).toBeUndefined();
      continue;
    }
    await within(`PostgreSQL's wait from ${wait.where}, settled on the memory store by ${where}`, wait.postgres.done, BOUND_MS);
    expect(pair.normalize(wait.postgres.outcome), `${where}: the wait from ${wait.where} ended differently`).toStrictEqual(
      pair.normalize(wait.memory.outcome),
    );
    waits.splice(waits.indexOf(wait), 1);
  }
}

/** Waits still pending at the end are aborted: both must reject with the signal's reason. */
async function abortWaits(pair: StorePair, waits: PendingWait[], { compare }: { compare: boolean }): Promise<void> {
  for (const wait of waits) {
    wait.memory.controller.abort(new Error('the model run ended'));
    wait.postgres.controller.abort(new Error('the model run ended'));
  }
  await within('aborted waits ending', Promise.all(waits.flatMap((wait) => [wait.memory.done, wait.postgres.done])));
  for (const wait of waits.splice(0)) {
    if (compare) expect(pair.normalize(wait.postgres.outcome), `the wait from ${wait.where}, aborted at the end`).toStrictEqual(
      pair.normalize(wait.memory.outcome),
    );
  }
}
