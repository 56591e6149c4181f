/**
 * What the dashboard's JSON endpoints answer, read with the CLI's own queries (operator-queries.ts)
 * and, for a settled task's outcome and for a cancel, through the store itself.
 */
import { TaskStoreError } from '../../contract/errors.js';
import type { TaskStatus, TaskStore } from '../../contract/types.js';
import type { CliDatabase } from '../database.js';
import { parseSince, type Since } from '../arguments.js';
import { truncate } from '../format.js';
import {
  listTasks,
  readHistory,
  readInputRequests,
  readTask,
  readTombstone,
  storeCounts,
  TASK_STATUSES,
  type ListingPosition,
  type TaskDetail,
  type TaskFilter,
} from '../operator-queries.js';
import { readTaskLease } from './task-lease.js';
import { toolActivity } from './tool-activity.js';
import type { SummaryJson, TaskDetailJson, TaskPageJson } from './client/wire.js';

export const DEFAULT_PAGE_SIZE = 25;
const MAX_PAGE_SIZE = 200;
/** The cursor `tasks` prints: created_at in microseconds, and the task id. */
const CURSOR = /^(\d{1,20})-([0-9a-f]{32})$/;
const SUMMARY_CHARS = 600;

/** A query string the page did not build: answered 400 with this message. */
export class BadRequest extends Error {}

export class DashboardApi {
  constructor(
    private readonly database: CliDatabase,
    private readonly store: TaskStore,
  ) {}

  async summary(): Promise<Omit<SummaryJson, 'feed'>> {
    const [counts, tools] = await Promise.all([storeCounts(this.database), toolActivity(this.database)]);
    return { ...counts, tools, readAt: new Date().toISOString() };
  }

  /** A page of live tasks, newest first; `cursor` is the previous page's `nextCursor`. */
  async tasks(query: URLSearchParams): Promise<TaskPageJson> {
    const filter: TaskFilter = {};
    const status = query.get('status');
    if (status) {
      if (!(TASK_STATUSES as readonly string[]).includes(status)) throw new BadRequest(`status ${status}: expected one of ${TASK_STATUSES.join(', ')}`);
      filter.status = status as TaskStatus;
    }
    const tool = query.get('tool');
    if (tool) filter.toolName = tool;
    const owner = query.get('owner');
    if (owner) filter.owner = owner;
    const since = query.get('since');
    if (since) filter.since = parseSinceQuery(since);
    const limit = Number(query.get('limit') ?? DEFAULT_PAGE_SIZE);
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE_SIZE) throw new BadRequest(`limit: expected a whole number from 1 to ${MAX_PAGE_SIZE}`);
    const cursor = query.get('cursor');
    const { tasks, next } = await listTasks(this.database, filter, cursor ? parseCursor(cursor) : null, limit);
    return json({ tasks, nextCursor: next ? `${next.createdUs}-${next.taskId}` : null, serverNow: new Date() }) satisfies TaskPageJson;
  }

  /** Everything `show` tells about a task, and its outcome; null when there is neither task nor tombstone. */
  async task(taskId: string): Promise<TaskDetailJson | null> {
    const task = await readTask(this.database, taskId);
    const tombstone = task ? null : await readTombstone(this.database, taskId);
    if (!task && !tombstone) return null;
    const [inputRequests, history, lease, outcome] = await Promise.all([
      readInputRequests(this.database, taskId),
      readHistory(this.database, taskId),
      readTaskLease(this.database, taskId),
      task && !task.expired ? this.outcome(taskId) : null,
    ]);
    return json({ task: task ? shownFields(task) : null, tombstone, inputRequests, history, lease, outcome, serverNow: new Date() }) satisfies TaskDetailJson;
  }

  /** Cancels through the store, so the task's token is raised wherever it is held. */
  async cancel(taskId: string): Promise<{ status: TaskStatus } | null> {
    try {
      const task = await this.store.cancelTask(taskId, 'cancelled from the dashboard');
      return task ? { status: task.status } : null;
    } catch (error) {
      if (error instanceof TaskStoreError && error.kind === 'invalid_input') throw new BadRequest(error.message);
      throw error;
    }
  }

  private async outcome(taskId: string): Promise<TaskDetailJson['outcome']> {
    const snapshot = await this.store.getTaskResult(taskId);
    if (snapshot?.error) return { kind: 'error', isError: true, summary: truncate(JSON.stringify(snapshot.error), SUMMARY_CHARS) };
    if (!snapshot?.result) return null;
    const { result } = snapshot;
    const texts = result.content.flatMap((item) => (isText(item) ? [item.text] : []));
    const summary = texts.length > 0 ? texts.join('\n') : JSON.stringify(result.structuredContent ?? result.content);
    return { kind: 'result', isError: result.isError === true, summary: summary.length > SUMMARY_CHARS ? `${summary.slice(0, SUMMARY_CHARS - 1)}…` : summary };
  }
}

/** The task as the page shows it: the error is in the outcome, the read time in serverNow. */
function shownFields({ readAt: _readAt, error: _error, ...shown }: TaskDetail): Omit<TaskDetail, 'readAt' | 'error'> {
  return shown;
}

function parseCursor(cursor: string): ListingPosition {
  const match = CURSOR.exec(cursor);
  if (!match) throw new BadRequest('cursor: not a cursor this dashboard gave');
  return { createdUs: match[1]!, taskId: match[2]! };
}

function isText(item: unknown): item is { type: 'text'; text: string } {
  return typeof item === 'object' && item !== null && (item as { type?: unknown }).type === 'text' && typeof (item as { text?: unknown }).text === 'string';
}

/** `since` as the CLI's --since takes it: a duration back (1h, 2d) or an ISO time. */
function parseSinceQuery(value: string): Since {
  try {
    return parseSince(value);
  } catch (error) {
    throw new BadRequest(error instanceof Error ? error.message.replace(/^--since/, 'created since') : String(error));
  }
}

/** A value as JSON carries it: dates as ISO strings. */
type Wire<T> = T extends Date ? string : T extends (infer Item)[] ? Wire<Item>[] : T extends object ? { [Key in keyof T]: Wire<T[Key]> } : T;

/** Dates become ISO strings, as on the wire; the type says so, so the compiler checks the wire types. */
function json<T>(value: T): Wire<T> {
  return JSON.parse(JSON.stringify(value)) as Wire<T>;
}
