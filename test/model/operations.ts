/**
 * The operations of the model-based test: every TaskStore method, as plain data fast-check can
 * generate, shrink and print. Tasks are named by the order they were created in (`{ slot }`), so a
 * sequence means the same thing on both stores although each draws its own ids.
 *
 * Values are mostly valid and drawn from small sets, so sequences keep hitting the interesting
 * rules (spent keys, quotas, terminal states); a few are invalid, which both stores must refuse
 * alike. Hostile input in bulk is the fuzz tests' job.
 */
import fc from 'fast-check';
import type { TaskStatus } from '../../src/index.js';

/** A created task by creation order (taken modulo the tasks created so far), an unknown id, or a raw string. */
export type TaskRef = { slot: number } | { unknown: true } | { raw: string };

export type Operation =
  | { op: 'createTask'; input: Record<string, unknown> }
  | {
      op:
        | 'taskOwner'
        | 'taskPresence'
        | 'getTask'
        | 'getTaskResult'
        | 'outstandingInputRequests'
        | 'inputResponses'
        | 'resumeContext'
        | 'discardTask';
      task: TaskRef;
    }
  | { op: 'waitForCompletion'; task: TaskRef }
  | { op: 'listTasks'; options: Record<string, unknown> }
  | { op: 'requireInput'; task: TaskRef; requests: Record<string, unknown>; message?: string | null }
  | { op: 'applyInputResponses'; task: TaskRef; responses: Record<string, unknown> }
  | { op: 'setStatus'; task: TaskRef; status: string; message?: string | null }
  | { op: 'setTtl'; task: TaskRef; ttlMs: number }
  | { op: 'setTaskMeta'; task: TaskRef; meta: Record<string, unknown> }
  | { op: 'completeTask'; task: TaskRef; result: Record<string, unknown> }
  | { op: 'failTask'; task: TaskRef; error: Record<string, unknown> }
  | { op: 'cancelTask'; task: TaskRef; reason?: string | null }
  | { op: 'reapExpired' };

/** A TTL no run outlives. Positive TTLs shorter than a run would make expiry a race between clocks. */
export const LONG_TTL_MS = 3_600_000;

const STATUSES: TaskStatus[] = ['working', 'input_required', 'completed', 'failed', 'cancelled'];

const taskRef: fc.Arbitrary<TaskRef> = fc.oneof(
  { weight: 12, arbitrary: fc.nat({ max: 5 }).map((slot) => ({ slot })) },
  { weight: 1, arbitrary: fc.constant({ unknown: true as const }) },
  { weight: 1, arbitrary: fc.constantFrom('', 'not-a-task', 'F'.repeat(32), '0'.repeat(31)).map((raw) => ({ raw })) },
);

/** Short strings: ASCII, and now and then a character outside the BMP or a combining mark. */
const shortText = fc.oneof(
  { weight: 4, arbitrary: fc.string({ maxLength: 12 }) },
  { weight: 1, arbitrary: fc.constantFrom('ß', 'e\u0301', '😀 done', '\u{10FFFF}') },
);

const json = fc.jsonValue({ maxDepth: 2 });
const jsonObject = fc.dictionary(fc.string({ maxLength: 6 }), json, { maxKeys: 3 });

const owner = fc.constantFrom(undefined, null, '', 'alice', 'bob', 'ålice 😀');

const createInput = fc.record(
  {
    toolName: fc.oneof({ weight: 10, arbitrary: fc.constantFrom('build', 'deploy', 'tool ü') }, { weight: 1, arbitrary: fc.constantFrom('', 'x'.repeat(1025)) }),
    arguments: json,
    ttlMs: fc.oneof(
      { weight: 10, arbitrary: fc.constantFrom(undefined, null, 0, LONG_TTL_MS) },
      { weight: 1, arbitrary: fc.constantFrom(-1, 0.5, Number.NaN) },
    ),
    owner,
    pollIntervalMs: fc.constantFrom(undefined, 0, 500, 5000),
  },
  { requiredKeys: ['toolName'] },
);

const REQUEST_KEYS = ['a', 'b', 'c'];
const inputRequest = fc.constantFrom<Record<string, unknown>>(
  { method: 'roots/list' },
  { method: 'elicitation/create', params: { mode: 'form', message: 'Approve?', requestedSchema: { type: 'object', properties: {} } } },
  { method: 'elicitation/create', params: { mode: 'form', message: 'Which region?', requestedSchema: { type: 'object', properties: {} } } },
  { method: 'sampling/createMessage', params: { messages: [], maxTokens: 10 } },
);
const inputRequests = fc.oneof(
  { weight: 10, arbitrary: fc.dictionary(fc.constantFrom(...REQUEST_KEYS), inputRequest, { minKeys: 1, maxKeys: 3 }) },
  { weight: 1, arbitrary: fc.constantFrom<Record<string, unknown>>({}, { a: { method: 'tools/call' } }, { '': { method: 'roots/list' } }) },
);
const inputResponses = fc.dictionary(
  fc.constantFrom(...REQUEST_KEYS, 'z'),
  fc.constantFrom<Record<string, unknown>>({ action: 'accept' }, { action: 'decline' }, { action: 'accept', content: { region: 'eu' } }, { roots: [] }),
  { maxKeys: 3 },
);

const message = fc.constantFrom(undefined, null, 'Need approval', 'Halfway 😀');

const toolResult = fc.record(
  {
    content: fc.array(fc.record({ type: fc.constant('text'), text: shortText }), { maxLength: 2 }),
    isError: fc.boolean(),
    structuredContent: jsonObject,
  },
  { requiredKeys: ['content'] },
);

const rpcError = fc.record(
  {
    code: fc.oneof(fc.constantFrom(-32603, -32602, 0, 1), fc.integer()),
    message: shortText,
    data: json,
  },
  { requiredKeys: ['code', 'message'] },
);

const taskOperation = <O extends Operation['op']>(...ops: O[]) =>
  fc.record({ op: fc.constantFrom(...ops), task: taskRef });

export const operation: fc.Arbitrary<Operation> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ op: fc.constant('createTask' as const), input: createInput }) },
  {
    weight: 6,
    arbitrary: taskOperation(
      'taskOwner',
      'taskPresence',
      'getTask',
      'getTaskResult',
      'outstandingInputRequests',
      'inputResponses',
      'resumeContext',
    ),
  },
  { weight: 2, arbitrary: taskOperation('discardTask') },
  { weight: 3, arbitrary: taskOperation('waitForCompletion') },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('listTasks' as const),
      options: fc.record(
        {
          status: fc.constantFrom(...STATUSES),
          owner,
          limit: fc.constantFrom(1, 2, 3, 100),
        },
        { requiredKeys: [] },
      ),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('listTasks' as const),
      options: fc.constantFrom<Record<string, unknown>>({ cursor: '' }, { cursor: 'bm90IGEgY3Vyc29y' }, { limit: 0 }, { status: 'paused' }),
    }),
  },
  { weight: 4, arbitrary: fc.record({ op: fc.constant('requireInput' as const), task: taskRef, requests: inputRequests, message }, { requiredKeys: ['op', 'task', 'requests'] }) },
  { weight: 4, arbitrary: fc.record({ op: fc.constant('applyInputResponses' as const), task: taskRef, responses: inputResponses }) },
  {
    weight: 2,
    arbitrary: fc.record(
      { op: fc.constant('setStatus' as const), task: taskRef, status: fc.constantFrom(...STATUSES, 'paused'), message },
      { requiredKeys: ['op', 'task', 'status'] },
    ),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('setTtl' as const),
      task: taskRef,
      ttlMs: fc.oneof({ weight: 8, arbitrary: fc.constantFrom(0, LONG_TTL_MS, 2 * LONG_TTL_MS) }, { weight: 1, arbitrary: fc.constantFrom(-5, 1.5) }),
    }),
  },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('setTaskMeta' as const), task: taskRef, meta: jsonObject }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('completeTask' as const), task: taskRef, result: toolResult }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('failTask' as const), task: taskRef, error: rpcError }) },
  {
    weight: 2,
    arbitrary: fc.record(
      { op: fc.constant('cancelTask' as const), task: taskRef, reason: fc.constantFrom(undefined, null, 'user left', 'r'.repeat(300)) },
      { requiredKeys: ['op', 'task'] },
    ),
  },
  { weight: 1, arbitrary: fc.constant({ op: 'reapExpired' as const }) },
);

export const operations = fc.array(operation, { minLength: 1, maxLength: 30, size: 'max' });
