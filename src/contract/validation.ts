/**
 * zod schemas for every value that crosses the TaskStore API. A store parses its arguments here
 * before touching any state, so bad input fails with `invalid_input` and changes nothing.
 */
import { z } from 'zod';
import { invalidInput, terminalStatusRefused } from './errors.js';
import { decodeCursor, type ListPosition } from './listing.js';
import {
  isTerminal,
  TASK_STATUSES,
  type CallToolResult,
  type CreateTaskInput,
  type InputRequests,
  type InputResponses,
  type JsonRpcError,
  type TaskOwner,
  type TaskStatus,
} from './types.js';

/** 1000 years: far beyond any real retention, and still a valid date on every clock involved. */
const MAX_TTL_MS = 1000 * 365.25 * 24 * 60 * 60 * 1000;
export const DEFAULT_TTL_MS = 300_000;
const DEFAULT_PAGE_LIMIT = 100;
const MAX_PAGE_LIMIT = 1000;

const TASK_ID_PATTERN = /^[0-9a-f]{32}$/;

/**
 * Any id this package ever issues matches {@link TASK_ID_PATTERN}; anything else names no task, so
 * stores answer "unknown" for it without a lookup.
 */
export function isIssuableTaskId(taskId: string): boolean {
  return TASK_ID_PATTERN.test(taskId);
}

/**
 * Why `value` is not plain JSON, or null when it is. PostgreSQL's jsonb and text cannot hold a NUL
 * character, so both stores reject it to behave alike.
 */
function findJsonProblem(value: unknown, path: (string | number)[], seen: Set<object>): { message: string; path: (string | number)[] } | null {
  switch (typeof value) {
    case 'string':
      return value.includes('\u0000') ? { message: 'strings must not contain NUL characters', path } : null;
    case 'number':
      return Number.isFinite(value) ? null : { message: 'numbers must be finite', path };
    case 'boolean':
      return null;
    case 'object': {
      if (value === null) return null;
      if (seen.has(value)) return { message: 'value must not be circular', path };
      const isArray = Array.isArray(value);
      const prototype = Object.getPrototypeOf(value);
      if (!isArray && prototype !== Object.prototype && prototype !== null) {
        return { message: 'objects must be plain JSON objects', path };
      }
      seen.add(value);
      for (const [key, item] of Object.entries(value)) {
        if (key.includes('\u0000')) return { message: 'keys must not contain NUL characters', path };
        if (key === '__proto__') return { message: 'the key __proto__ is not allowed', path };
        const problem = findJsonProblem(item, [...path, isArray ? Number(key) : key], seen);
        if (problem) return problem;
      }
      seen.delete(value);
      return null;
    }
    default:
      return { message: `${typeof value} is not a JSON value`, path };
  }
}

/** Checks the raw value, before zod copies it (a copy would drop a `__proto__` key silently). */
function plainJson<S extends z.ZodType>(schema: S) {
  return z
    .unknown()
    .superRefine((value, ctx) => {
      const problem = findJsonProblem(value, [], new Set());
      if (problem) ctx.addIssue({ code: 'custom', message: problem.message, path: problem.path });
    })
    .pipe(schema);
}

const jsonValue = plainJson(z.unknown());
const jsonObject = plainJson(z.record(z.string(), z.unknown()));

const text = z.string().refine((s) => !s.includes('\u0000'), 'must not contain NUL characters');

const taskIdSchema = z.string();
const ownerSchema = text.nullable();
export const ttlSchema = z.number().int().min(0).max(MAX_TTL_MS);
const statusSchema = z.enum(TASK_STATUSES as [TaskStatus, ...TaskStatus[]]);
const messageSchema = text.max(16_384).nullish();
const metaSchema = jsonObject;

const createTaskInputSchema = z.strictObject({
  toolName: text.min(1).max(1024),
  arguments: jsonValue.optional(),
  ttlMs: ttlSchema.nullable().optional(),
  owner: ownerSchema.optional(),
  pollIntervalMs: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional(),
});

const callToolResultSchema = plainJson(
  z.looseObject({
    content: z.array(z.unknown()),
    isError: z.boolean().optional(),
    structuredContent: z.record(z.string(), z.unknown()).optional(),
    _meta: z.record(z.string(), z.unknown()).optional(),
  }),
);

const jsonRpcErrorSchema = z.strictObject({
  code: z.number().int().min(Number.MIN_SAFE_INTEGER).max(Number.MAX_SAFE_INTEGER),
  message: text,
  data: jsonValue.optional(),
});

const requestKey = text.min(1).max(1024);

const inputRequestSchema = z.discriminatedUnion('method', [
  z.strictObject({ method: z.literal('elicitation/create'), params: jsonObject }),
  z.strictObject({ method: z.literal('sampling/createMessage'), params: jsonObject }),
  z.strictObject({ method: z.literal('roots/list'), params: jsonObject.optional() }),
]);

const inputRequestsSchema = plainJson(z.record(requestKey, inputRequestSchema));
const inputResponsesSchema = plainJson(z.record(requestKey, jsonObject));

const waitOptionsSchema = z.strictObject({ signal: z.instanceof(AbortSignal).optional() }).optional();

const listTasksOptionsSchema = z.strictObject({
  status: statusSchema.optional(),
  owner: ownerSchema.optional(),
  cursor: z.string().max(1024).optional(),
  limit: z.number().int().min(1).max(MAX_PAGE_LIMIT).optional(),
});

/**
 * Parses `value` or throws `invalid_input` naming the field: `"requests.approval.method: …"`.
 */
export function parse<S extends z.ZodType>(schema: S, value: unknown, field: string): z.output<S> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  throw invalidInput([field, ...issue.path.map(String)].join('.'), issue.message);
}

export interface ListFilter {
  status: TaskStatus | undefined;
  /** `undefined`: every owner. */
  owner: TaskOwner | undefined;
  /** The page starts strictly after this position. */
  after: ListPosition | null;
  limit: number;
}

/**
 * The arguments of each TaskStore method, validated the same way for every store: each argument in
 * order, before the store looks at any task, so a malformed call is refused whatever the task's
 * state and changes nothing.
 */
export const validate = {
  taskId: (taskId: string): string => parse(taskIdSchema, taskId, 'taskId'),

  createTask: (input: CreateTaskInput) => parse(createTaskInputSchema, input, 'input'),

  waitForCompletion(taskId: string, options: unknown) {
    return { taskId: validate.taskId(taskId), signal: parse(waitOptionsSchema, options, 'options')?.signal };
  },

  /** `undefined` lists with the defaults; `null`, like every other non-object, is refused. */
  listTasks(options: unknown): ListFilter {
    const parsed = parse(listTasksOptionsSchema, options === undefined ? {} : options, 'options');
    return {
      status: parsed.status,
      owner: parsed.owner,
      after: parsed.cursor === undefined ? null : decodeCursor(parsed.cursor),
      limit: parsed.limit ?? DEFAULT_PAGE_LIMIT,
    };
  },

  requireInput(taskId: string, requests: InputRequests, message: unknown) {
    return {
      taskId: validate.taskId(taskId),
      requests: parse(inputRequestsSchema, requests, 'requests') as InputRequests,
      message: parse(messageSchema, message, 'message') ?? null,
    };
  },

  applyInputResponses(taskId: string, responses: InputResponses) {
    return { taskId: validate.taskId(taskId), responses: parse(inputResponsesSchema, responses, 'responses') as InputResponses };
  },

  /** `setStatus` is for progress: a terminal status throws `invalid_transition`, whatever the task. */
  setStatus(taskId: string, status: TaskStatus, message: unknown) {
    const parsed = {
      taskId: validate.taskId(taskId),
      status: parse(statusSchema, status, 'status'),
      message: parse(messageSchema, message, 'message') ?? null,
    };
    if (isTerminal(parsed.status)) throw terminalStatusRefused(parsed.status);
    return parsed;
  },

  setTtl: (taskId: string, ttlMs: number) => ({ taskId: validate.taskId(taskId), ttlMs: parse(ttlSchema, ttlMs, 'ttlMs') }),

  setTaskMeta(taskId: string, meta: Record<string, unknown>) {
    return { taskId: validate.taskId(taskId), meta: parse(metaSchema, meta, 'meta') };
  },

  completeTask(taskId: string, result: CallToolResult) {
    return { taskId: validate.taskId(taskId), result: parse(callToolResultSchema, result, 'result') as CallToolResult };
  },

  failTask(taskId: string, error: JsonRpcError) {
    return { taskId: validate.taskId(taskId), error: parse(jsonRpcErrorSchema, error, 'error') as JsonRpcError };
  },

  cancelTask(taskId: string, reason: unknown) {
    return { taskId: validate.taskId(taskId), reason: parse(messageSchema, reason, 'reason') ?? null };
  },
};
