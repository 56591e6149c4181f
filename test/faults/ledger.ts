/**
 * A workload for fault tests, and the books that prove what it did survived: every task runs the
 * same lifecycle (create, ask for input, answer, complete, with a waiter on the completion), each
 * step retried after a `backend` error until it gives a definite answer. Afterwards the database is
 * checked against what the callers were told:
 *   - nothing lost: every step a caller saw succeed is in the tables;
 *   - nothing applied twice: each task's history is exactly one row per status change, its answer
 *     was accepted exactly once, and a task whose creation failed exists at most once;
 *   - every waiter ended with the completed task.
 */
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { expect } from 'vitest';
import { TaskStoreError, type TaskStore } from '../../src/index.js';
import { sleep, within } from '../support/time.js';

/** Far beyond the backstop poll (1 s) that wakes a waiter whose NOTIFY was lost. */
const WAKE_BOUND_MS = 10_000;
const QUESTION = { q: { method: 'roots/list' } } as const;
const EXPECTED_HISTORY = [
  [null, 'working'],
  ['working', 'input_required'],
  ['input_required', 'working'],
  ['working', 'completed'],
];

interface TaskRecord {
  worker: number;
  sequence: number;
  taskId: string | null;
  /** How many calls of `applyInputResponses` reported the answer accepted. */
  acceptedCount: number;
  /** How many calls of `completeTask` returned true. */
  completedCount: number;
  waitedStatus: string | null;
  done: boolean;
}

export interface LedgerOptions {
  /** The store each step runs on; several let lifecycles cross instances. */
  stores: TaskStore[];
  /** How long one step may keep failing with `backend` before the test fails. */
  retryForMs?: number;
}

export class Ledger {
  readonly records: TaskRecord[] = [];
  /** `backend` errors callers saw: a fault test that saw none injected nothing. */
  backendErrors = 0;
  private readonly stores: TaskStore[];
  private readonly retryForMs: number;
  /** Tells this ledger's tasks from those of any other in the same schema. */
  private readonly run = randomUUID();

  constructor(options: LedgerOptions) {
    this.stores = options.stores;
    this.retryForMs = options.retryForMs ?? 20_000;
  }

  /** Runs `workers` loops of lifecycles until `stop()` resolves, then lets each finish its task. */
  async runUntil(stop: Promise<unknown>, workers: number): Promise<void> {
    let stopping = false;
    void stop.finally(() => (stopping = true));
    await Promise.all(
      Array.from({ length: workers }, async (_, worker) => {
        for (let sequence = 0; !stopping; sequence++) await this.lifecycle(worker, sequence);
      }),
    );
  }

  /** Runs `count` lifecycles, `concurrency` at a time. */
  async runCount(count: number, concurrency: number): Promise<void> {
    let next = 0;
    await Promise.all(
      Array.from({ length: concurrency }, async (_, worker) => {
        while (next < count) await this.lifecycle(worker, next++);
      }),
    );
  }

  async lifecycle(worker: number, sequence: number): Promise<void> {
    const record: TaskRecord = { worker, sequence, taskId: null, acceptedCount: 0, completedCount: 0, waitedStatus: null, done: false };
    this.records.push(record);
    const store = (step: number) => this.stores[(worker + sequence + step) % this.stores.length]!;
    // Creation is not idempotent, so it is tried once: a failure may or may not have created a row.
    try {
      record.taskId = (await store(0).createTask({ toolName: 'ledger', arguments: { run: this.run, worker, sequence }, ttlMs: 3_600_000 })).taskId;
    } catch (error) {
      this.countBackend(error);
      await sleep(20 + Math.random() * 30);
      return;
    }
    const id = record.taskId;
    const waiting = this.retrying('waitForCompletion', () => store(1).waitForCompletion(id));
    // Awaited below; this keeps a failure of a later step from leaving it unhandled.
    waiting.catch(() => {});
    expect(await this.retrying('requireInput', () => store(2).requireInput(id, QUESTION))).toBe(true);
    await this.retrying('applyInputResponses', async () => {
      const applied = await store(3).applyInputResponses(id, { q: { roots: [{ uri: `file:///${worker}/${sequence}` }] } });
      record.acceptedCount += applied?.accepted.length ?? 0;
    });
    await this.retrying('completeTask', async () => {
      if (await store(0).completeTask(id, { content: [{ type: 'text', text: `${worker}/${sequence}` }] })) record.completedCount++;
    });
    // Bounded, so a store that loses a waiter's wake fails here, by name, not as the test's timeout.
    const woken = await within(`lifecycle ${worker}/${sequence}: its waiter, once the task completed`, waiting, WAKE_BOUND_MS);
    record.waitedStatus = woken?.task.status ?? null;
    record.done = true;
  }

  /** Checks the tables of `schema` against the books. */
  async verify(pool: pg.Pool, schema: string): Promise<void> {
    const { rows } = await pool.query<{
      task_id: string;
      worker: number;
      sequence: number;
      status: string;
      result_text: string | null;
      history: (string | null)[][];
      answers: { state: string; uri: string | null }[];
    }>(
      `SELECT t.task_id, (t.arguments->>'worker')::int AS worker, (t.arguments->>'sequence')::int AS sequence, t.status,
              t.result->'content'->0->>'text' AS result_text,
              (SELECT coalesce(json_agg(json_build_array(h.from_status, h.to_status) ORDER BY h.id), '[]')
                 FROM ${schema}.task_history AS h WHERE h.task_id = t.task_id) AS history,
              (SELECT coalesce(json_agg(json_build_object('state', r.state, 'uri', r.response->'roots'->0->>'uri')), '[]')
                 FROM ${schema}.input_requests AS r WHERE r.task_id = t.task_id) AS answers
         FROM ${schema}.tasks AS t WHERE t.tool_name = 'ledger' AND t.arguments->>'run' = $1`,
      [this.run],
    );
    const byTaskId = new Map(rows.map((row) => [row.task_id, row]));
    const rowsOf = (record: TaskRecord) => rows.filter((row) => row.worker === record.worker && row.sequence === record.sequence);
    for (const record of this.records) {
      const where = `lifecycle ${record.worker}/${record.sequence}`;
      if (record.taskId === null) {
        expect(rowsOf(record).length, `${where}: a failed createTask made at most one task`).toBeLessThanOrEqual(1);
        continue;
      }
      expect(rowsOf(record).length, `${where}: one task`).toBe(1);
      const row = byTaskId.get(record.taskId);
      expect(row, `${where}: a created task is in the table`).toBeDefined();
      if (!record.done) continue;
      expect(row!.status, `${where}: completed`).toBe('completed');
      expect(row!.result_text, `${where}: its own result`).toBe(`${record.worker}/${record.sequence}`);
      expect(record.waitedStatus, `${where}: the waiter saw the completion`).toBe('completed');
      expect(record.acceptedCount, `${where}: the answer was accepted at most once`).toBeLessThanOrEqual(1);
      expect(record.completedCount, `${where}: completeTask returned true at most once`).toBeLessThanOrEqual(1);
      expect(row!.history, `${where}: one history row per status change`).toStrictEqual(EXPECTED_HISTORY);
      expect(row!.answers, `${where}: the one question, answered once`).toStrictEqual([
        { state: 'answered', uri: `file:///${record.worker}/${record.sequence}` },
      ]);
    }
  }

  get completed(): number {
    return this.records.filter((record) => record.done).length;
  }

  /** Retries `call` while it fails with `backend`; any other failure fails the test at once. */
  private async retrying<T>(what: string, call: () => Promise<T>): Promise<T> {
    const deadline = Date.now() + this.retryForMs;
    for (;;) {
      try {
        return await call();
      } catch (error) {
        this.countBackend(error);
        if (Date.now() > deadline) throw new Error(`${what} kept failing for ${this.retryForMs} ms: ${String(error)}`, { cause: error });
        await sleep(20 + Math.random() * 30);
      }
    }
  }

  private countBackend(error: unknown): void {
    if (!(error instanceof TaskStoreError) || error.kind !== 'backend') throw error;
    this.backendErrors++;
  }
}
