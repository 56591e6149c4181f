/**
 * What the dashboard's server sends its page, as JSON (dates as ISO strings): the types both
 * sides are written against, as types only. It imports nothing, so that the page's build
 * (./tsconfig.json) stays inside this directory; where the server fills these types from the
 * store's own, the compiler checks that they still agree.
 */

export type TaskStatus = 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled';
export type InputRequestState = 'outstanding' | 'answered' | 'superseded';

export type Iso = string;

export interface SessionJson {
  schema: string;
  /** The database's name only: no URL, host or user. */
  database: string;
  allowActions: boolean;
  csrfToken: string;
  pageSize: number;
}

/** One tool: its live tasks by status, and what it settled lately, by outcome. */
export interface ToolActivityJson {
  toolName: string;
  live: Partial<Record<TaskStatus, number>>;
  settledLastHour: Partial<Record<TaskStatus, number>>;
  settledLastDay: Partial<Record<TaskStatus, number>>;
}

/** The header: live tasks by status, as `status` counts them, the busiest tools, and the feed's state. */
export interface SummaryJson {
  tasks: Record<TaskStatus, number>;
  tools: ToolActivityJson[];
  expired: number;
  tombstones: number;
  feed: FeedState;
  readAt: Iso;
}

/** `stale`: the listener is up but re-reading the rows fails. */
export type FeedState = 'connecting' | 'listening' | 'reconnecting' | 'stale' | 'closed';

export interface TaskLineJson {
  taskId: string;
  status: TaskStatus;
  toolName: string;
  owner: string | null;
  statusMessage: string | null;
  createdAt: Iso;
  lastUpdatedAt: Iso;
  expiresAt: Iso | null;
}

export interface TaskPageJson {
  tasks: TaskLineJson[];
  nextCursor: string | null;
  /** The server's clock, for the time-to-live countdowns. */
  serverNow: Iso;
}

export interface TaskDetailJson {
  task:
    | (TaskLineJson & { ttlMs: number | null; pollIntervalMs: number | null; cancelRequestedAt: Iso | null; expired: boolean })
    | null;
  /** What is left of an expired task the reaper has reached. */
  tombstone: { owner: string | null; expiredAt: Iso; tombstonedAt: Iso } | null;
  inputRequests: { key: string; state: InputRequestState; request: unknown; response: unknown; issuedAt: Iso; settledAt: Iso | null }[];
  history: { at: Iso; fromStatus: TaskStatus | null; toStatus: TaskStatus; message: string | null; previousStateMs: number | null }[];
  /** Its runner's execution lease; null when it has none (or the schema predates leases). */
  lease: { runnerId: string | null; acquiredAt: Iso; expiresAt: Iso; overdue: boolean; attempts: number; lostRunner: string | null } | null;
  /** A settled task's result or JSON-RPC error, shortened. */
  outcome: { kind: 'result' | 'error'; isError: boolean; summary: string } | null;
  serverNow: Iso;
}

/** One change, as `watch --json` prints it. */
export interface TaskChangeJson {
  at: Iso;
  change: 'created' | 'updated' | 'expired' | 'deleted';
  taskId: string;
  status: TaskStatus | null;
  previousStatus: TaskStatus | null;
  toolName: string | null;
  owner: string | null;
  statusMessage: string | null;
  cancelRequestedAt: Iso | null;
}

/** The events of `/api/events`, by SSE event name. */
export interface FeedEvents {
  /** Changes found by one re-read, in the order found. */
  changes: TaskChangeJson[];
  summary: SummaryJson;
  feed: { state: FeedState };
  /** Changes may have been missed (the listener reconnected): read everything again. */
  refresh: { reason: string };
}
