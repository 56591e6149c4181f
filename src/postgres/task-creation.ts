/**
 * How PostgresTaskStore creates a task: the input validated into the row to write, the write under
 * the owner quota (retention.ts), and the new task's cancellation token. A leased creation runs
 * its write inside the runner's `inserting` (leases.ts), so the runner's heartbeat lists the task.
 */
import type { CancellationToken } from '../contract/cancellation.js';
import { generateTaskId } from '../contract/ids.js';
import type { LeasedTask } from '../contract/leases.js';
import { statusMessages } from '../contract/messages.js';
import { checkedPayload } from '../contract/retention.js';
import type { CreateTaskInput } from '../contract/types.js';
import { validate } from '../contract/validation.js';
import type { LeasedInserts } from './leases.js';
import type { RetentionEnforcer } from './retention.js';
import type { StoreCalls } from './store-calls.js';
import type { StoreDatabase } from './tables.js';
import { createdTask } from './task-rows.js';
import type { NewTask, TaskStatements, TimeLeft } from './task-statements.js';
import type { TaskWatcher } from './task-watcher.js';
import type { StoreTelemetry } from './telemetry.js';

export interface CreationHost {
  calls: StoreCalls;
  statements: TaskStatements;
  retention: RetentionEnforcer;
  watcher: TaskWatcher;
  telemetry: StoreTelemetry;
  defaultTtlMs: number;
  maxPayloadBytes: number;
}

export class TaskCreation {
  constructor(private readonly host: CreationHost) {}

  async create(input: CreateTaskInput): Promise<{ taskId: string; token: CancellationToken }> {
    const { taskId, token } = await this.write(input, (db, task) => this.host.statements.insert.execute(db, task));
    return { taskId, token };
  }

  /** `create`, naming `runner` as the task's runner. */
  async createLeased(input: CreateTaskInput, runner: LeasedInserts): Promise<LeasedTask> {
    const { taskId, token, task, row } = await this.write(
      input,
      (db, task) => this.host.statements.insertLeased.execute(db, { ...task, runnerId: runner.runnerId }),
      runner,
    );
    return { taskId, token, task: createdTask(task, row.created_ms) };
  }

  /** Writes the task by `insert`, inside `runner.inserting` for a leased task. */
  private write<R extends TimeLeft>(
    input: CreateTaskInput,
    insert: (db: StoreDatabase['db'], task: NewTask) => Promise<{ rows: R[] }>,
    runner?: LeasedInserts,
  ) {
    const { calls, retention, watcher, telemetry, defaultTtlMs, maxPayloadBytes } = this.host;
    return calls.run(async () => {
      const parsed = validate.createTask(input);
      const argumentsJson = checkedPayload('arguments', parsed.arguments ?? null, maxPayloadBytes).json;
      const taskId = generateTaskId();
      const task: NewTask = {
        taskId,
        owner: parsed.owner ?? null,
        toolName: parsed.toolName,
        argumentsJson,
        statusMessage: statusMessages.created,
        ttlMs: parsed.ttlMs === undefined ? defaultTtlMs : parsed.ttlMs,
        pollIntervalMs: parsed.pollIntervalMs ?? null,
      };
      const inserting = () => retention.insert(task, (db) => insert(db, task));
      const row = await (runner ? runner.inserting(taskId, inserting) : inserting());
      telemetry.transitioned('working');
      return { taskId, token: watcher.holdToken(taskId, row.ms_until_expiry), task, row };
    });
  }
}
