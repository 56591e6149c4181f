/**
 * The kill test: two `npm start` servers as separate processes on one database; the one running
 * two `slow_compute` tasks (one from an SDK 1.x client, one from a SEP-2663 client) is killed
 * with SIGKILL mid-task. The other must rescue both within a lease plus one rescuer interval,
 * resume each exactly once from its last progress, and serve the results to new clients.
 */
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { call } from '../router/support/requester.js';
import { eventually, within } from '../support/time.js';
import { spawnServer, useMcpTestbed, type ServerProcess } from './support.js';

const testbed = useMcpTestbed();
const HEARTBEAT_MS = 300;
const LEASE_MS = 1_000;
/** What may pass between the kill and the rescue: the lease, one rescuer interval, and scheduling. */
const RESCUE_BOUND_MS = LEASE_MS + HEARTBEAT_MS + 700;
const LEASES = { MCP_DEMO_RUN: '0', MCP_HEARTBEAT_MS: String(HEARTBEAT_MS), MCP_LEASE_MS: String(LEASE_MS) };

const running: ServerProcess[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((server) => server.stop('SIGKILL')));
});

const runnerOf = (server: ServerProcess) => /^runner: (\S+)/m.exec(server.output())![1]!;

describe('a server killed mid-task', () => {
  it('has its tasks resumed once by the survivor, within the lease and a rescuer interval; both eras’ clients get the results', async () => {
    const [doomed, survivor] = await Promise.all([spawnServer(testbed.connectionString, LEASES), spawnServer(testbed.connectionString, LEASES)]);
    running.push(doomed, survivor);
    const admin = new pg.Client({ connectionString: testbed.connectionString });
    await admin.connect();
    try {
      const sdkClient = await testbed.client(doomed.url);
      const legacy = await sdkClient.request(
        { method: 'tools/call', params: { name: 'slow_compute', arguments: { seconds: 4, label: 'legacy' }, task: { ttl: 600_000 } } },
        CreateTaskResultSchema,
      );
      const modernCall = await call(doomed.url.toString(), null, 'tools/call', { name: 'slow_compute', arguments: { seconds: 4, label: 'modern' } });
      const ids = { legacy: legacy.task.taskId, modern: String(modernCall.result?.['taskId']) };

      // Both have made progress on the doomed server before it dies.
      const progress = async (taskId: string) =>
        (await admin.query('SELECT status_message FROM mcp_tasks.tasks WHERE task_id = $1', [taskId])).rows[0]?.status_message as string;
      await eventually('both tasks past their first second', async () => (await progress(ids.legacy)).includes(': 1 of') && (await progress(ids.modern)).includes(': 1 of'), 10_000);
      const { rows: leases } = await admin.query('SELECT runner_id FROM mcp_tasks.execution_leases ORDER BY task_id');
      expect(leases.map((row) => row.runner_id)).toStrictEqual([runnerOf(doomed), runnerOf(doomed)]);

      const killedAt = Date.now();
      expect(await doomed.stop('SIGKILL')).toBeNull();

      // Rescued within the bound, each once, by the survivor, which resumes both.
      const rescues = async () =>
        (await admin.query('SELECT task_id, at, lost_runner, rescued_by, outcome FROM mcp_tasks.task_rescues ORDER BY task_id')).rows;
      await eventually('both tasks rescued', async () => (await rescues()).length === 2, RESCUE_BOUND_MS + 3_000);
      const rescued = await rescues();
      for (const rescue of rescued) {
        expect(rescue).toMatchObject({ lost_runner: runnerOf(doomed), rescued_by: runnerOf(survivor), outcome: 'resumed' });
        expect((rescue.at as Date).getTime() - killedAt, 'time from the kill to the rescue').toBeLessThanOrEqual(RESCUE_BOUND_MS);
      }

      // SDK 1.x, on a new session with the survivor: tasks/result.
      const onSurvivor = await testbed.client(survivor.url);
      const legacyResult = await within('tasks/result on the survivor', onSurvivor.experimental.tasks.getTaskResult(ids.legacy, CallToolResultSchema), 15_000);
      expect(legacyResult.content).toEqual([{ type: 'text', text: expect.stringMatching(/^legacy: computed for 4 s \(resumed at [1-3] s\)$/) }]);
      expect((await onSurvivor.experimental.tasks.getTask(ids.legacy)).status).toBe('completed');

      // SEP-2663: tasks/get on the survivor, until it carries the result.
      let modern: Record<string, unknown> = {};
      await eventually(
        'the modern task completing',
        async () => {
          modern = (await call(survivor.url.toString(), null, 'tasks/get', { taskId: ids.modern })).result ?? {};
          return modern['status'] === 'completed';
        },
        15_000,
      );
      expect(modern['result']).toMatchObject({ content: [{ type: 'text', text: expect.stringMatching(/^modern: computed for 4 s \(resumed at [1-3] s\)$/) }] });

      // Exactly one resume each: one rescue row, and the history's working -> working once.
      const { rows: history } = await admin.query(
        `SELECT task_id, count(*) FILTER (WHERE rescued_by IS NOT NULL)::int AS rescues,
                count(*) FILTER (WHERE to_status = 'completed')::int AS completions
           FROM mcp_tasks.task_history WHERE task_id = ANY($1) GROUP BY task_id`,
        [[ids.legacy, ids.modern]],
      );
      expect(history.map(({ rescues: r, completions }) => [r, completions])).toStrictEqual([
        [1, 1],
        [1, 1],
      ]);
      expect((await admin.query('SELECT count(*)::int AS n FROM mcp_tasks.task_leases')).rows[0].n).toBe(0);
    } finally {
      await admin.end();
    }
  });
});
