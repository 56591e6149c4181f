/**
 * What `status`, `tasks` and `show` tell an operator about execution leases: the runner of each
 * running task, a rescued task awaiting a resume, and the rescues of tasks whose runner died.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate, PostgresTaskStore } from '../../src/index.js';
import { createPool } from '../../src/postgres/pool.js';
import { useTestDatabase } from '../support/test-database.js';
import { cli } from './cli-support.js';

const database = useTestDatabase();
const SCHEMA = 'cli_leases';
const env = () => ({ DATABASE_URL: database.connectionString });
let pool: pg.Pool;
let store: PostgresTaskStore;
let ids: Record<'running' | 'failed' | 'awaiting', string>;

beforeAll(async () => {
  pool = createPool(database.connectionString, 4);
  await migrate({ pool, schema: SCHEMA });
  store = new PostgresTaskStore({
    pool,
    schema: SCHEMA,
    reaper: false,
    listen: false,
    leases: { heartbeatMs: 60_000, leaseMs: 180_000, tools: { resumable_tool: { onLost: 'resume' } } },
  });
  const failed = (await store.leases.createLeasedTask({ toolName: 'plain_tool' })).taskId;
  const awaiting = (await store.leases.createLeasedTask({ toolName: 'resumable_tool' })).taskId;
  await store.leases.abandonLeases();
  expect(await store.leases.rescueLostTasks()).toEqual({ failed: 1, resumed: 1 });
  const running = (await store.leases.createLeasedTask({ toolName: 'plain_tool' })).taskId;
  ids = { running, failed, awaiting };
});

afterAll(async () => {
  await store?.close();
  await pool?.end();
});

async function run(args: string[]): Promise<string> {
  const result = await cli([...args, '--schema', SCHEMA], env());
  expect(result).toMatchObject({ code: 0, err: [] });
  return result.out.join('\n');
}

describe('leases in the CLI', () => {
  it('tasks: the runner of each running task, and a rescued one awaiting a resume', async () => {
    const { tasks } = JSON.parse(await run(['tasks', '--json']));
    const byId = new Map(tasks.map((task: { taskId: string }) => [task.taskId, task]));
    expect(byId.get(ids.running)).toMatchObject({ lease: { runnerId: store.leases.runnerId, attempts: 0, overdue: false } });
    expect(byId.get(ids.awaiting)).toMatchObject({ status: 'working', lease: { runnerId: null, attempts: 1 } });
    expect(byId.get(ids.failed)).toMatchObject({ status: 'failed', lease: null });
    const table = await run(['tasks']);
    expect(table).toContain('RUNNER');
    expect(table.split('\n').find((line) => line.startsWith(ids.awaiting))).toContain('awaiting resume');
    expect(table.split('\n').find((line) => line.startsWith(ids.running))).toContain(store.leases.runnerId);
  });

  it('show: the lease of a running task, and the rescues of one whose runner died', async () => {
    expect(await run(['show', ids.running])).toMatch(new RegExp(`runner +${escape(store.leases.runnerId)} until \\S+Z`));
    const failed = await run(['show', ids.failed]);
    expect(failed).toContain('rescues');
    expect(failed).toMatch(new RegExp(`failed +${escape(store.leases.runnerId)} +${escape(store.leases.runnerId)}`));
    expect(await run(['show', ids.awaiting])).toMatch(/runner +awaiting a resume by \S+Z, 1 rescue/);
  });

  it('status: the runners, the tasks awaiting a resume, and the rescues of the last day', async () => {
    const { leases } = JSON.parse(await run(['status', '--json']));
    expect(leases).toEqual({
      runners: [{ runnerId: store.leases.runnerId, leases: 1, overdue: 0 }],
      awaitingResume: 1,
      rescuedLastDay: { failed: 1, resumed: 1 },
    });
    const text = await run(['status']);
    expect(text).toMatch(new RegExp(`runners +${escape(store.leases.runnerId)} \\(1 task\\); 1 rescued awaiting a resume`));
    expect(text).toMatch(/rescued +1 resumed, 1 failed in the last day/);
  });
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
