/**
 * How long after a completion commits does a waiter on another instance wake? Instance B
 * completes, instance A waits (separate pools, one schema), one task at a time; the delay is
 * measured from the moment B's completeTask returns (the commit has happened by then) to the
 * moment A's waitForCompletion resolves. Beside it, a poller at the MCP SDK's default 1 s interval.
 *
 *   npm run bench:latency                       (embedded PostgreSQL in a temp dir)
 *   DATABASE_URL=postgres://… npm run bench:latency -- --tasks=2000
 */
import { migrate, PostgresTaskStore } from '../src/index.js';
import { openScriptDatabase } from './database.js';
import { parseArgs, percentile, scriptPool, sleep } from './support.js';

const args = parseArgs({ tasks: 1000, pollers: 200 });
const POLL_INTERVAL_MS = 1000;
const SCHEMA = 'bench_latency';

async function main(): Promise<void> {
  const database = await openScriptDatabase();
  console.log(`database: ${database.description}`);
  const admin = scriptPool(database.connectionString, 1);
  await admin.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
  await migrate({ pool: admin, schema: SCHEMA });
  const waiter = new PostgresTaskStore({ connectionString: database.connectionString, schema: SCHEMA, reaper: false });
  const completer = new PostgresTaskStore({ connectionString: database.connectionString, schema: SCHEMA, reaper: false });
  await new Promise<void>((resolve) => {
    if (waiter.listenerState === 'listening') resolve();
    waiter.onListenerStateChange(({ state }) => state === 'listening' && resolve());
  });

  const notified: number[] = [];
  for (let i = 0; i < args.tasks + 50; i++) {
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
    if (i >= 50) notified.push(Math.max(0, woke - committed)); // the first 50 warm up
  }

  // The baseline: each poller reads its task every second, from a random phase; each task is
  // completed at a random moment, and the poller notices at its next read.
  const polled = await Promise.all(
    Array.from({ length: args.pollers }, async () => {
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

  const line = (name: string, samples: number[]) =>
    console.log(
      `  ${name.padEnd(34)} p50 ${percentile(samples, 50).toFixed(2).padStart(7)} ms   p99 ${percentile(samples, 99).toFixed(2).padStart(7)} ms   (${samples.length} tasks)`,
    );
  console.log('\nfrom the completing commit to the waiter waking, across two instances:');
  line('LISTEN/NOTIFY waiter', notified);
  line(`polling every ${POLL_INTERVAL_MS} ms (MCP SDK default)`, polled);
  await Promise.all([waiter.close(), completer.close()]);
  await admin.query(`DROP SCHEMA ${SCHEMA} CASCADE`);
  await admin.end();
  await database.stop();
}

await main();
