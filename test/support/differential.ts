/**
 * Running the same calls on a MemoryTaskStore and a PostgresTaskStore and comparing what they
 * answer, for the model-based and fuzz tests. The memory store is the reference: every observable
 * answer of the PostgreSQL store must equal it, once the ids each store drew are replaced by labels
 * and the timestamps (each store's own clock) are left out.
 */
import type pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import {
  CancellationToken,
  MemoryTaskStore,
  migrate,
  PostgresTaskStore,
  TaskStoreError,
  type RetentionLimits,
  type TaskStoreErrorKind,
} from '../../src/index.js';
import { createPool } from '../../src/postgres/pool.js';
import { listening } from './postgres-stores.js';
import { emptyTables } from './table-contents.js';
import { useTestDatabase } from './test-database.js';

/** What a call did: its answer, or the kind of TaskStoreError it threw, or anything else it threw. */
export type Outcome = { value: unknown } | { error: TaskStoreErrorKind } | { crash: string };

/** Options both stores understand alike. */
export interface PairOptions {
  defaultTtlMs?: number;
  limits?: Pick<RetentionLimits, 'maxPayloadBytes' | 'maxTasksPerOwner'>;
}

/** An hour: tombstones outlive every run, and no cleanup pass starts on its own during one. */
const TOMBSTONE_RETENTION_MS = 3_600_000;

export async function outcomeOf(call: () => unknown): Promise<Outcome> {
  try {
    return { value: await call() };
  } catch (error) {
    if (error instanceof TaskStoreError) return { error: error.kind };
    return { crash: error instanceof Error ? `${error.name}: ${error.message}` : `threw ${String(error)}` };
  }
}

export function isCrash(outcome: Outcome): outcome is { crash: string } {
  return 'crash' in outcome;
}

/**
 * One PostgresTaskStore on a migrated schema of the file's test database, kept for the whole file
 * (fresh stores per run would spend most of the time connecting), and a MemoryTaskStore with the
 * same options made new for every run. `fresh()` empties the tables and returns the pair.
 */
export function useStorePair(options: PairOptions = {}): {
  fresh(): Promise<StorePair>;
  readonly admin: pg.Pool;
  readonly schema: string;
  readonly postgres: PostgresTaskStore;
} {
  const database = useTestDatabase();
  const schema = `pair_${process.pid}`;
  let admin: pg.Pool | undefined;
  let postgres: PostgresTaskStore | undefined;
  let memory: MemoryTaskStore | undefined;

  beforeAll(async () => {
    admin = createPool(database.connectionString, 4);
    await migrate({ pool: admin, schema });
    postgres = new PostgresTaskStore({
      connectionString: database.connectionString,
      schema,
      ...options,
      reaper: { intervalMs: TOMBSTONE_RETENTION_MS, tombstoneRetentionMs: TOMBSTONE_RETENTION_MS },
    });
    // Let the start-up reaper pass go by: runs drive reaping themselves.
    await new Promise((resolve) => postgres!.onReaperPass(resolve));
    await listening(postgres);
  });
  afterAll(async () => {
    await memory?.close();
    await postgres?.close();
    await admin?.end();
  });

  const required = <T>(value: T | undefined, what: string): T => {
    if (value === undefined) throw new Error(`${what} exists once beforeAll has run`);
    return value;
  };
  return {
    async fresh() {
      await memory?.close();
      await emptyTables(required(admin, 'the admin pool'), schema);
      memory = new MemoryTaskStore({ ...options, tombstoneRetentionMs: TOMBSTONE_RETENTION_MS });
      return new StorePair(memory, required(postgres, 'the store'));
    },
    get admin() {
      return required(admin, 'the admin pool');
    },
    get postgres() {
      return required(postgres, 'the store');
    },
    schema,
  };
}

/** A task both stores created from the same call. */
export interface TaskPairing {
  label: string;
  memoryId: string;
  postgresId: string;
  memoryToken: CancellationToken;
  postgresToken: CancellationToken;
}

export type Side = 'memory' | 'postgres';

export class StorePair {
  readonly tasks: TaskPairing[] = [];
  private readonly labels = new Map<string, string>();

  constructor(
    readonly memory: MemoryTaskStore,
    readonly postgres: PostgresTaskStore,
  ) {}

  store(side: Side): MemoryTaskStore | PostgresTaskStore {
    return side === 'memory' ? this.memory : this.postgres;
  }

  /** Records a task each store created from one call; returns its label. */
  pair(memory: { taskId: string; token: CancellationToken }, postgres: { taskId: string; token: CancellationToken }): string {
    const label = `task#${this.tasks.length}`;
    this.tasks.push({
      label,
      memoryId: memory.taskId,
      postgresId: postgres.taskId,
      memoryToken: memory.token,
      postgresToken: postgres.token,
    });
    this.labels.set(memory.taskId, label);
    this.labels.set(postgres.taskId, label);
    return label;
  }

  idOn(side: Side, pairing: TaskPairing): string {
    return side === 'memory' ? pairing.memoryId : pairing.postgresId;
  }

  /** The label of a paired task's id; any other id stays as it is. */
  label(taskId: string): string {
    return this.labels.get(taskId) ?? taskId;
  }

  /** An answer with store ids replaced by labels, timestamps and cursors' contents left out. */
  normalize(value: unknown): unknown {
    return normalize(value, (id) => this.label(id));
  }

  /** Whether each paired task's token is raised, by label, as each store sees it. */
  tokenStates(): { memory: Record<string, boolean>; postgres: Record<string, boolean> } {
    return {
      memory: Object.fromEntries(this.tasks.map((task) => [task.label, task.memoryToken.isCancelled])),
      postgres: Object.fromEntries(this.tasks.map((task) => [task.label, task.postgresToken.isCancelled])),
    };
  }
}

const TIMESTAMP_KEYS = new Set(['createdAt', 'lastUpdatedAt']);

/**
 * Canonical form for comparing answers of two stores: keys sorted (jsonb keeps its own key order),
 * -0 as 0 (jsonb has no -0), task ids through `label`, timestamps dropped, a cursor reduced to its
 * presence and a token to whether it is raised. An object becomes a Map of its entries: vitest's
 * strict equality takes an object's `constructor` property for its type, so two equal objects with
 * a `constructor` key (`{"constructor": []}` is valid meta) would otherwise never compare equal.
 */
export function normalize(value: unknown, label: (id: string) => string): unknown {
  if (value instanceof CancellationToken) return { tokenRaised: value.isCancelled };
  if (Array.isArray(value)) return value.map((item) => normalize(item, label));
  if (typeof value === 'number') return Object.is(value, -0) ? 0 : value;
  if (typeof value !== 'object' || value === null) return value;
  const entries = Object.entries(value)
    .filter(([key]) => !TIMESTAMP_KEYS.has(key))
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([key, item]): [string, unknown] => {
      if (key === 'taskId' && typeof item === 'string') return [key, label(item)];
      if (key === 'nextCursor') return [key, item === null ? null : 'a cursor'];
      return [key, normalize(item, label)];
    });
  return new Map(entries);
}
