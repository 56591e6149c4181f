/** Small helpers the scripts share. */
import pg from 'pg';
import type { TaskStore } from '../src/index.js';

/** One task's life as a tool call drives it: create → set status → complete → read the result. */
export async function storeLifecycle(store: TaskStore, create: TaskStore['createTask'] = (input) => store.createTask(input)): Promise<void> {
  const { taskId } = await create({ toolName: 'bench', arguments: { n: 1 } });
  await store.setStatus(taskId, 'working', 'step 1 of 1');
  await store.completeTask(taskId, { content: [{ type: 'text', text: 'done' }] });
  if (!(await store.getTaskResult(taskId))?.result) throw new Error('lost a result');
}

/**
 * A pool whose idle connections may die quietly: ending a pool does not wait for its sockets to
 * close, and a server stopped right after would otherwise crash the script with their errors.
 */
export function scriptPool(connectionString: string, max: number, settings: Pick<pg.PoolConfig, 'idleTimeoutMillis'> = {}): pg.Pool {
  const pool = new pg.Pool({ connectionString, max, ...settings });
  pool.on('error', () => {});
  return pool;
}

export function percentile(samples: number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
}

export function median(samples: number[]): number {
  return percentile(samples, 50);
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
