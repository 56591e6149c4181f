/**
 * pg-boss as a lifecycle contender, in a process of its own because pg-boss 12 needs Node 22
 * (started by lifecycle.ts through child-process.ts). A lifecycle is what a job queue would do for
 * a tool call: send (create) → fetch (claim: the job becomes active) → complete with the result
 * → getJobById (read it back). Maintenance, supervision and scheduling are off, as the store's
 * reaper is off in the same run, so only the lifecycle is measured.
 *
 * Requests: { op: 'start', connectionString, schema, poolSize } → { version }
 *           { op: 'measure', concurrency, seconds } → { rate }
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { PgBoss } from 'pg-boss';
import { serveBenchRequests } from './child-process.js';
import { runLoops } from './rounds.js';

const QUEUE = 'bench';
const RESULT = { content: [{ type: 'text', text: 'done' }] };

let boss: PgBoss | null = null;

async function lifecycle(queue: PgBoss): Promise<void> {
  await queue.send(QUEUE, { n: 1 });
  // Another loop's fetch may hold the job this loop just sent (SKIP LOCKED); any job will do.
  let job;
  while (!(job = (await queue.fetch(QUEUE))[0]));
  await queue.complete(QUEUE, job.id, RESULT);
  const done = await queue.getJobById(QUEUE, job.id);
  if (done?.state !== 'completed' || !done.output) throw new Error('lost a result');
}

function pgBossVersion(): string {
  const manifest = createRequire(import.meta.url).resolve('pg-boss/package.json');
  return (JSON.parse(readFileSync(manifest, 'utf8')) as { version: string }).version;
}

serveBenchRequests(async (message) => {
  switch (message.op) {
    case 'start': {
      boss = new PgBoss({
        connectionString: String(message.connectionString),
        schema: String(message.schema),
        max: Number(message.poolSize),
        supervise: false,
        schedule: false,
      });
      boss.on('error', (error) => console.error(`pg-boss: ${String(error)}`));
      await boss.start();
      await boss.createQueue(QUEUE);
      return { version: pgBossVersion() };
    }
    case 'measure': {
      const queue = boss;
      if (!queue) throw new Error('measure before start');
      return { rate: await runLoops(() => lifecycle(queue), Number(message.concurrency), Number(message.seconds)) };
    }
    case 'close':
      await boss?.stop({ graceful: false });
      boss = null;
      return {};
    default:
      throw new Error(`unknown request ${String(message.op)}`);
  }
});
