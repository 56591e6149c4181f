/**
 * How long after a completion commits does a waiter on another instance wake? Instance B
 * completes, instance A waits (separate pools, one schema), one task at a time; the delay runs
 * from the moment B's completeTask returns (the commit has happened by then) to the moment A's
 * waitForCompletion resolves. Beside it, pollers reading their task at the MCP SDK's default
 * 1 s interval, each from a random phase, with each task completed at a random moment.
 */
import { migrate, PostgresTaskStore } from '../../src/index.js';
import { scriptPool, sleep } from '../support.js';
import { distribution, formatDistribution, type Distribution } from './distribution.js';

export interface WakeOptions {
  tasks: number;
  pollers: number;
}

export interface WakeResult {
  options: WakeOptions;
  notified: Distribution;
  polled: Distribution;
}

const POLL_INTERVAL_MS = 1000;
const SCHEMA = 'bench_latency';
const WARM_UP = 50;

function listening(store: PostgresTaskStore): Promise<void> {
  return new Promise<void>((resolve) => {
    if (store.listenerState === 'listening') resolve();
    store.onListenerStateChange(({ state }) => state === 'listening' && resolve());
  });
}

export async function runWakeBenchmark(connectionString: string, options: WakeOptions): Promise<WakeResult> {
  const admin = scriptPool(connectionString, 1);
  await admin.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
  await migrate({ pool: admin, schema: SCHEMA });
  const waiter = new PostgresTaskStore({ connectionString, schema: SCHEMA, reaper: false });
  const completer = new PostgresTaskStore({ connectionString, schema: SCHEMA, reaper: false });
  try {
    await listening(waiter);
    console.log(`wake latency: ${options.tasks} tasks one at a time across two instances; ${options.pollers} pollers`);
    const notified: number[] = [];
    for (let i = 0; i < options.tasks + WARM_UP; i++) {
      const { taskId } = await completer.createTask({ toolName: 'latency' });
      let woke = 0;
      const waiting = waiter.waitForCompletion(taskId).then((snapshot) => {
        woke = performance.now();
        if (snapshot?.task.status !== 'completed') throw new Error('a waiter woke without the result');
      });
      await sleep(3); // let the waiter register, so the wake comes from the NOTIFY
      await completer.completeTask(taskId, { content: [] });
      const committed = performance.now();
      await waiting;
      if (i >= WARM_UP) notified.push(Math.max(0, woke - committed));
    }

    const polled = await Promise.all(
      Array.from({ length: options.pollers }, async () => {
        const { taskId } = await completer.createTask({ toolName: 'latency' });
        let committed = Infinity;
        void sleep(Math.random() * 3000).then(async () => {
          await completer.completeTask(taskId, { content: [] });
          committed = performance.now();
        });
        await sleep(Math.random() * POLL_INTERVAL_MS);
        for (;;) {
          if ((await waiter.getTask(taskId))?.status === 'completed' && performance.now() >= committed) {
            return performance.now() - committed;
          }
          await sleep(POLL_INTERVAL_MS);
        }
      }),
    );
    const result = { options, notified: distribution(notified), polled: distribution(polled) };
    console.log(`  LISTEN/NOTIFY waiter          ${formatDistribution(result.notified)}`);
    console.log(`  polling every ${POLL_INTERVAL_MS} ms (MCP SDK)  ${formatDistribution(result.polled)}`);
    return result;
  } finally {
    await Promise.all([waiter.close(), completer.close()]);
    await admin.query(`DROP SCHEMA ${SCHEMA} CASCADE`);
    await admin.end();
  }
}
