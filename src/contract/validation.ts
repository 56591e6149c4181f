/**
 * zod schemas for every value that crosses the TaskStore API. A store parses its arguments here
 * before touching any state, so bad input fails with `invalid_input` and changes nothing.
 */
import { z } from 'zod';
import { invalidInput, readingThrew, terminalStatusRefused } from './errors.js';
import { decodeCursor, type ListPosition } from './listing.js';
import { detachFields, readPlainJson, textProblem, type ReadThrew } from './plain-json.js';
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
export const MAX_TTL_MS = 1000 * 365.25 * 24 * 60 * 60 * 1000;
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
 * Reads the raw value once into a detached copy (readPlainJson), which the schema then checks and
 * the store keeps: a zod copy of the original would drop a `__proto__` key silently, and would
 * read the caller's getters again.
 */
function plainJson<S extends z.ZodType>(schema: S) {
  return z
    .unknown()
    .transform((value, ctx) => {
      const read = readPlainJson(value);
      if ('value' in read) return read.value;
      const { message, path, cause } = read.problem;
      ctx.addIssue({ code: 'custom', message, path, ...(cause !== undefined && { params: { cause } }) });
      return z.NEVER;
    })
    .pipe(schema);
}

/**
 * A group of fields inside an argument (an option group such as `listen`), read once like the
 * argument itself (see {@link parse}): a field whose read throws is named, with the caller's error.
 */
export function readFields<S extends z.ZodType>(schema: S) {
  return z
    .unknown()
    .transform((value, ctx) => {
      const read = detachFields(value);
      if ('threw' in read) {
        ctx.addIssue({ code: 'custom', message: readingThrew(read.threw), path: read.key === null ? [] : [read.key], params: { cause: read.threw } });
        return z.NEVER;
      }
      // Any other object is not a group of fields; handed on, a thenable would make zod wait for it.
      if (read.value === value && typeof value === 'object' && value !== null) {
        ctx.addIssue({ code: 'custom', message: 'must be a plain object' });
        return z.NEVER;
      }
      return read.value;
    })
    .pipe(schema);
}

const jsonValue = plainJson(z.unknown());
const jsonObject = plainJson(z.record(z.string(), z.unknown()));

/**
 * zod runs a string's length checks on any value, reading its `length` (a proxy's `get` trap, a
 * getter): with the type checked first, alone, a value that is no string runs no caller code.
 */
export function stringFirst<S extends z.ZodType<string, string>>(schema: S) {
  return z.string().pipe(schema);
}

/** Every string the stores keep: the rules of plain-json.ts. */
const text = z.string().superRefine((value, ctx) => {
  const problem = textProblem(value);
  if (problem) ctx.addIssue({ code: 'custom', message: problem });
});

const taskIdSchema = z.string();
/**
 * An owner is a principal's identifier, not content: bounded in length (so it always fits the
 * owner index) rather than measured against `maxPayloadBytes`, like the tool name.
 */
const ownerSchema = stringFirst(text.max(512)).nullable();
export const ttlSchema = z.number().int().min(0).max(MAX_TTL_MS);
const statusSchema = z.enum(TASK_STATUSES as [TaskStatus, ...TaskStatus[]]);
const messageSchema = stringFirst(text.max(16_384)).nullish();
const metaSchema = jsonObject;

const createTaskInputSchema = z.strictObject({
  toolName: stringFirst(text.min(1).max(1024)),
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

/** Checked as one JSON value, like a result: its depth counts from the error object. */
const jsonRpcErrorSchema = plainJson(
  z.strictObject({
    code: z.number().int().min(Number.MIN_SAFE_INTEGER).max(Number.MAX_SAFE_INTEGER),
    message: text,
    data: z.unknown().optional(),
  }),
);

const requestKey = text.min(1).max(1024);

const inputRequestSchema = z.discriminatedUnion('method', [
  z.strictObject({ method: z.literal('elicitation/create'), params: jsonObject }),
  z.strictObject({ method: z.literal('sampling/createMessage'), params: jsonObject }),
  z.strictObject({ method: z.literal('roots/list'), params: jsonObject.optional() }),
]);

const inputRequestsSchema = plainJson(z.record(requestKey, inputRequestSchema));
const inputResponsesSchema = plainJson(z.record(requestKey, jsonObject));

/** `instanceof` runs a proxy's `getPrototypeOf` trap: one that throws is named, with its error as cause. */
const abortSignalSchema = z
  .unknown()
  .superRefine((value, ctx) => {
    try {
      if (typeof value === 'object' && value !== null) Object.getPrototypeOf(value);
    } catch (error) {
      ctx.addIssue({ code: 'custom', message: readingThrew(error), params: { cause: error } });
    }
  })
  .pipe(z.instanceof(AbortSignal));

const waitOptionsSchema = z.strictObject({ signal: abortSignalSchema.optional() }).optional();

const listTasksOptionsSchema = z.strictObject({
  status: statusSchema.optional(),
  owner: ownerSchema.optional(),
  cursor: stringFirst(z.string().max(1024)).optional(),
  limit: z.number().int().min(1).max(MAX_PAGE_LIMIT).optional(),
});

/**
 * Parses `value` or throws `invalid_input` naming the field: `"requests.approval.method: …"`.
 *
 * The one rule for a caller's value whose reading runs the caller's code (a getter, a Proxy trap):
 * it is read once, before any statement, into a detached copy that the store keeps, and a read
 * that throws is `invalid_input` naming the field it was reading, with the caller's error as
 * `cause`. A plain-object argument is copied here, its JSON values by {@link plainJson}, option
 * groups by {@link readFields}.
 */
export function parse<S extends z.ZodType>(schema: S, value: unknown, field: string): z.output<S> {
  const detached = detachFields(value);
  if ('threw' in detached) throw threwAt(field, detached);
  let issue: z.core.$ZodIssue;
  try {
    const parsed = schema.safeParse(detached.value, { error: messagesNotFailing });
    if (parsed.success) return parsed.data;
    // zod writes its messages when they are first read, looking at the value again (a proxy's
    // prototype, say): inside the try too.
    issue = parsed.error.issues[0]!;
  } catch (error) {
    // Caller code that no copy reached (an array's element, an AbortSignal look-alike) threw while
    // zod read it: still the caller's input, never the store's failure.
    throw invalidInput(field, readingThrew(error), error);
  }
  const cause = issue.code === 'custom' ? (issue.params as { cause?: unknown } | undefined)?.cause : undefined;
  throw invalidInput([field, ...issue.path.map(String)].join('.'), issue.message, cause);
}

/**
 * zod's own messages, which look at the value again (`received Proxy`): a proxy's trap may throw
 * there, and the message then says what was expected without looking, so the issue keeps its path.
 */
const messagesNotFailing: z.core.$ZodErrorMap = (issue) => {
  try {
    return z.config().localeError?.(issue);
  } catch {
    return 'expected' in issue ? `Invalid input: expected ${String(issue.expected)}` : undefined;
  }
};

function threwAt(field: string, read: ReadThrew) {
  return invalidInput(read.key === null ? field : `${field}.${read.key}`, readingThrew(read.threw), read.threw);
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

  taskIds: (taskIds: readonly string[]): readonly string[] => parse(z.array(taskIdSchema).readonly(), taskIds, 'taskIds'),

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
