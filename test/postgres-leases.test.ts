/**
 * Execution leases across PostgreSQL store instances (the one-instance contract is in
 * test/conformance/leases.ts): rescue by another instance, resume on the instance with the hook,
 * many rescuers at once, a heartbeat racing the rescue, a runner cut off from the database, and
 * the history each rescue leaves.
 */
import { Kysely, PostgresDialect, sql } from 'kysely';
import { describe, expect, it, onTestFinished } from 'vitest';
import { leaseStatements } from '../src/postgres/lease-statements.js';
import { storeDatabase, type TaskDatabase } from '../src/postgres/tables.js';
import { createPool, dialectPool } from '../src/postgres/pool.js';
import type { PostgresTaskStore } from '../src/index.js';
import { usePostgresStores } from './support/postgres-stores.js';
import { useStoreRoles } from './support/store-roles.js';
import { eventually, sleep, within } from './support/time.js';

const stores = usePostgresStores();
const roles = useStoreRoles(stores);
const QUICK = { heartbeatMs: 40, leaseMs: 200, rescueIntervalMs: 3_600_000 };
const TOOL = 'slow_tool';
const done = { content: [{ type: 'text' as const, text: 'done' }] };

async function leased(store: PostgresTaskStore, toolName = TOOL): Promise<string> {
  return (await store.leases.createLeasedTask({ toolName, arguments: { n: 1 }, ttlMs: 600_000 })).taskId;
}

async function rescues(schema: string, taskId: string) {
  const { rows } = await stores.pool().query(
    `SELECT tool_name, lost_runner, rescued_by, outcome, message FROM ${schema}.task_rescues WHERE task_id = $1 ORDER BY at`,
    [taskId],
  );
  return rows;
}

describe('leases across instances', () => {
  it('another instance rescues a dead runner’s task; the runner, back, cannot overwrite the outcome; history names both', async () => {
    const schema = await stores.schema();
    const runner = stores.open(schema, { leases: QUICK });
    const rescuer = stores.open(schema, { leases: QUICK });
    const id = await leased(runner);
    expect(await runner.leases.abandonLeases()).toBe(1);

    expect(await rescuer.leases.rescueLostTasks()).toStrictEqual({ failed: 1, resumed: 0 });
    expect(await runner.completeTask(id, done), 'the lost runner’s late completion').toBe(false);
    expect(await runner.setStatus(id, 'working', 'step 9')).toBe(false);
    const snapshot = await rescuer.getTaskResult(id);
    expect(snapshot?.task.status).toBe('failed');
    expect(snapshot?.error?.data).toMatchObject({ reason: 'runner_lost', lostRunner: runner.leases.runnerId });

    expect(await rescues(schema, id)).toStrictEqual([
      { tool_name: TOOL, lost_runner: runner.leases.runnerId, rescued_by: rescuer.leases.runnerId, outcome: 'failed', message: snapshot!.task.statusMessage },
    ]);
    const { rows } = await stores.pool().query(`SELECT count(*)::int AS n FROM ${schema}.task_leases`);
    expect(rows[0].n).toBe(0);
  });

  it('a rescued task resumes on the instance that registered the tool’s hook, exactly once', async () => {
    const schema = await stores.schema();
    const runner = stores.open(schema, { leases: { ...QUICK, tools: { [TOOL]: { onLost: 'resume' } } } });
    const survivor = stores.open(schema, { leases: QUICK });
    const resumed: string[] = [];
    survivor.leases.onResume(TOOL, async ({ taskId }) => {
      resumed.push(taskId);
      await survivor.completeTask(taskId, done);
    });
    const id = await leased(runner);
    await runner.leases.abandonLeases();

    // The rescuer here has no hook: the tool's policy hands the task on, the survivor's heartbeat claims it.
    expect(await runner.leases.rescueLostTasks()).toStrictEqual({ failed: 0, resumed: 1 });
    const outcome = await within('the survivor completing the task', survivor.waitForCompletion(id));
    expect(outcome?.task.status).toBe('completed');
    expect(resumed).toStrictEqual([id]);
    expect((await rescues(schema, id)).map((row) => row.outcome)).toStrictEqual(['resumed']);
    expect(await runner.completeTask(id, done)).toBe(false);
  });

  it('many rescuers at once rescue each task exactly once', async () => {
    const schema = await stores.schema();
    const runner = stores.open(schema, { leases: QUICK });
    const ids = await Promise.all(Array.from({ length: 60 }, () => leased(runner)));
    await runner.leases.abandonLeases();
    const rescuers = Array.from({ length: 8 }, () => stores.open(schema, { leases: { ...QUICK, rescueBatchSize: 7 } }));

    const results = await Promise.all(rescuers.map((rescuer) => rescuer.leases.rescueLostTasks()));
    const { rows } = await stores.pool().query(`SELECT task_id, count(*)::int AS n FROM ${schema}.task_rescues GROUP BY task_id`);
    // The rescuers that found the phase lock taken did nothing; a pass may also end before the last batch.
    await rescuers[0]!.leases.rescueLostTasks();
    const after = await stores.pool().query(`SELECT task_id, count(*)::int AS n FROM ${schema}.task_rescues GROUP BY task_id`);
    expect(results.reduce((sum, result) => sum + result.failed, 0)).toBe(rows.length);
    expect(after.rows).toHaveLength(ids.length);
    expect(after.rows.every((row) => row.n === 1)).toBe(true);
  });

  it('a heartbeat racing the rescue of its expired lease: either the runner keeps it or the rescue wins, never both', async () => {
    const schema = await stores.schema();
    const runner = stores.open(schema, { leases: QUICK });
    const rescuer = stores.open(schema, { leases: QUICK });
    const outcomes = { kept: 0, rescued: 0 };
    for (let round = 0; round < 20; round++) {
      const id = await leased(runner);
      await runner.leases.abandonLeases();
      const [renewed, rescue] = await Promise.all([runner.leases.acquireLease(id), rescuer.leases.rescueLostTasks()]);
      const completed = await runner.completeTask(id, done);
      const status = (await rescuer.getTask(id))?.status;
      if (rescue.failed === 1) {
        outcomes.rescued++;
        expect([renewed, completed, status]).toStrictEqual([false, false, 'failed']);
      } else {
        outcomes.kept++;
        expect([renewed, completed, status]).toStrictEqual([true, true, 'completed']);
      }
      expect(await rescues(schema, id)).toHaveLength(rescue.failed);
    }
    expect(outcomes.kept + outcomes.rescued).toBe(20);
  });

  it('a runner that dies before its first heartbeat lists a task: the rescue finds the task by its runner, then forgets the runner', async () => {
    const schema = await stores.schema();
    const runner = stores.open(schema, { leases: QUICK });
    const rescuer = stores.open(schema, { leases: QUICK });
    const id = await leased(runner);
    await runner.close();
    const diedAt = Date.now();
    const query = async (text: string) => (await stores.pool().query(text, [id])).rows;
    expect(await query(`SELECT FROM ${schema}.task_leases WHERE task_id = $1`), 'no lease row yet').toHaveLength(0);
    expect(await query(`SELECT runner_id FROM ${schema}.execution_leases WHERE task_id = $1`)).toStrictEqual([{ runner_id: runner.leases.runnerId }]);

    await eventually('the rescue', async () => (await rescuer.leases.rescueLostTasks()).failed === 1);
    expect(Date.now() - diedAt, 'from the death to the rescue').toBeLessThan(QUICK.leaseMs + 1_000);
    expect((await rescuer.getTask(id))?.status).toBe('failed');
    expect(await rescues(schema, id)).toMatchObject([{ lost_runner: runner.leases.runnerId, rescued_by: rescuer.leases.runnerId, outcome: 'failed' }]);
    const { rows: runners } = await stores.pool().query(`SELECT runner_id FROM ${schema}.lease_runners`);
    expect(runners, 'the dead runner, with nothing left to rescue, forgotten').toStrictEqual([]);
  });

  it('a create in flight across a heartbeat stays within reach of the rescue', async () => {
    const schema = await stores.schema();
    const runner = stores.open(schema, { leases: QUICK, limits: { maxTasksPerOwner: 10 } });
    const rescuer = stores.open(schema, { leases: QUICK });
    await leased(runner); // registers the runner, whose heartbeat now beats
    // The quota's owner lock holds the next create inside its transaction, already begun.
    const holder = await stores.pool().connect();
    const lockName = `${schema} owner ${JSON.stringify('alice')}`;
    await holder.query('SELECT pg_advisory_lock(hashtextextended($1, 0))', [lockName]);
    const creating = runner.leases.createLeasedTask({ toolName: TOOL, owner: 'alice', ttlMs: 600_000 });
    const beatAt = async () =>
      (await stores.pool().query(`SELECT beat_at FROM ${schema}.lease_runners WHERE runner_id = $1`, [runner.leases.runnerId])).rows[0].beat_at as Date;
    const before = await beatAt();
    await eventually('two heartbeats while the create waits', async () => (await beatAt()).getTime() > before.getTime() + QUICK.heartbeatMs);
    await holder.query('SELECT pg_advisory_unlock(hashtextextended($1, 0))', [lockName]);
    holder.release();
    const { taskId } = await creating;
    await runner.close(); // before a heartbeat can list the task

    const { rows } = await stores.pool().query(
      `SELECT t.created_at < r.beat_at AS created_before_last_beat, t.created_at >= r.listed_from AS within_reach, t.leased
         FROM ${schema}.tasks AS t JOIN ${schema}.lease_runners AS r USING (runner_id) WHERE t.task_id = $1`,
      [taskId],
    );
    expect(rows).toStrictEqual([{ created_before_last_beat: true, within_reach: true, leased: false }]);
    await eventually('the rescue', async () => (await rescuer.leases.rescueLostTasks()).failed >= 1);
    expect((await rescuer.getTask(taskId))?.status).toBe('failed');
  });

  it('a create waits for the heartbeat when the last one heard back is older than the lease less one interval', async () => {
    const schema = await stores.schema();
    const runner = stores.open(schema, { leases: QUICK });
    await leased(runner); // registers the runner
    // The runner's row locked: its heartbeat hangs, as on an overloaded server.
    const holder = await stores.pool().connect();
    let created = false;
    let creating: Promise<string>;
    try {
      await holder.query('BEGIN');
      await holder.query(`SELECT FROM ${schema}.lease_runners WHERE runner_id = $1 FOR UPDATE`, [runner.leases.runnerId]);
      await sleep(QUICK.leaseMs);
      creating = leased(runner).then((id) => ((created = true), id));
      await sleep(QUICK.leaseMs);
      expect(created, 'a task the rescuer could take as soon as it is written').toBe(false);
    } finally {
      await holder.query('COMMIT');
      holder.release();
    }
    const id = await creating!;
    expect((await runner.getTask(id))?.status, 'written once the heartbeat came back').toBe('working');
  });

  it('the first create, arriving while a beat that only claims is under way, waits for a beat that registers the runner', async () => {
    const schema = await stores.schema();
    const runner = stores.open(schema, { leases: QUICK });
    runner.leases.onResume(TOOL, async () => {}); // so that its beats claim before it creates anything
    const holder = await stores.pool().connect();
    let creating: Promise<unknown>;
    try {
      // The claim's table locked: the beat under way hangs in it.
      await holder.query('BEGIN');
      await holder.query(`LOCK TABLE ${schema}.task_leases IN ACCESS EXCLUSIVE MODE`);
      await sleep(QUICK.heartbeatMs * 3);
      creating = leased(runner).catch((error: unknown) => error);
      await sleep(QUICK.heartbeatMs);
    } finally {
      await holder.query('COMMIT');
      holder.release();
    }
    const id = await creating!;
    expect(typeof id, `the create's outcome: ${String(id)}`).toBe('string');
    expect((await runner.getTask(id as string))?.status).toBe('working');
  });

  it('a runner cut off from the database keeps running, but the rescue’s outcome is the only one', async () => {
    const schema = await stores.schema();
    const role = await roles(schema);
    const runnerPool = createPool(role.connectionString, 4);
    onTestFinished(() => runnerPool.end());
    const runner = stores.open(schema, { pool: runnerPool, leases: QUICK, lockTimeoutMs: 500 });
    const rescuer = stores.open(schema, { leases: QUICK });
    const id = await leased(runner);

    await role.logins(false);
    await stores.pool().query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1', [new URL(role.connectionString).username]);
    await eventually('the lease running out while the runner cannot renew it', async () => (await rescuer.leases.rescueLostTasks()).failed === 1);

    await role.logins(true);
    // Back on the network: its next heartbeat learns the lease is gone, and its outcome is refused.
    await sleep(QUICK.heartbeatMs * 3);
    expect(await runner.completeTask(id, done)).toBe(false);
    expect(await runner.failTask(id, { code: 1, message: 'late' })).toBe(false);
    expect((await rescuer.getTask(id))?.status).toBe('failed');
    expect(await rescues(schema, id)).toHaveLength(1);
  });

  it('the automatic rescuer finds an expired lease within the lease plus one rescue interval', async () => {
    const schema = await stores.schema();
    const runner = stores.open(schema, { leases: { heartbeatMs: 3_600_000, leaseMs: 7_200_001 } });
    const rescuer = stores.open(schema, { reaper: { intervalMs: 3_600_000 }, leases: { heartbeatMs: 50, leaseMs: 150, rescueIntervalMs: 100 } });
    const id = await leased(runner);
    // A runner that dies: its lease is due now and nobody renews it.
    await runner.leases.abandonLeases();
    const started = Date.now();
    await eventually('the automatic rescue', async () => (await rescuer.getTask(id))?.status === 'failed');
    expect(Date.now() - started).toBeLessThan(100 + 1_000);
  });

  it('a heartbeat’s renewal rewrites no indexed column: a HOT update, which writes no index entry', async () => {
    const schema = await stores.schema();
    const runner = stores.open(schema, { leases: { heartbeatMs: 3_600_000, leaseMs: 7_300_000 } });
    const id = await leased(runner);
    const db = new Kysely<TaskDatabase>({ dialect: new PostgresDialect({ pool: dialectPool(stores.pool(), { preparedStatements: false }) }) });
    const { beat } = leaseStatements(storeDatabase(db, schema));
    const beating = { runnerId: runner.leases.runnerId, leaseMs: 60_000, listedFromMs: null };
    const listed = await beat.execute(db, { ...beating, listIds: [id], renewIds: [] });
    expect(listed.rows[0]!.task_ids, 'the first beat writes the lease row').toStrictEqual([id]);
    const counts = await db.transaction().execute(async (transaction) => {
      const renewed = await beat.execute(transaction, { ...beating, listIds: [], renewIds: [id] });
      expect(renewed.rows[0]!.task_ids).toStrictEqual([id]);
      return (
        await sql<{ updated: number; hot: number }>`
          SELECT n_tup_upd::int AS updated, n_tup_hot_upd::int AS hot FROM pg_stat_xact_user_tables
           WHERE relid = ${`${schema}.task_leases`}::regclass`.execute(transaction)
      ).rows;
    });
    expect(counts).toStrictEqual([{ updated: 1, hot: 1 }]);
  });

  it('a lease written by plain SQL (or an instance of an older version) guards its task like one this store took', async () => {
    const schema = await stores.schema();
    const runner = stores.open(schema, { leases: QUICK });
    const other = stores.open(schema, { leases: QUICK });
    const { taskId } = await other.createTask({ toolName: TOOL });
    const flagged = async () =>
      (await stores.pool().query(`SELECT leased FROM ${schema}.tasks WHERE task_id = $1`, [taskId])).rows[0].leased;
    expect(await flagged(), 'a task nobody leased').toBe(false);

    await stores.pool().query(
      `INSERT INTO ${schema}.task_leases (task_id, runner_id, expires_at, acquired_at) VALUES ($1, $2, now() + interval '1 minute', now())`,
      [taskId, runner.leases.runnerId],
    );
    expect(await flagged()).toBe(true);
    expect(await other.setStatus(taskId, 'working', 'not its runner'), 'progress from an instance without the lease').toBe(false);
    expect(await other.completeTask(taskId, done), 'an outcome from an instance without the lease').toBe(false);
    expect(await runner.completeTask(taskId, done)).toBe(true);
    const { rows } = await stores.pool().query(`SELECT count(*)::int AS n FROM ${schema}.task_leases`);
    expect(rows[0].n, 'the settled task’s lease ended with it').toBe(0);
  });

  it('an older version’s rescue, claim and release, in plain SQL, move the guard on the task row with them', async () => {
    const schema = await stores.schema();
    const [first, second, third] = [stores.open(schema, { leases: QUICK }), stores.open(schema, { leases: QUICK }), stores.open(schema, { leases: QUICK })];
    const sql = (text: string, taskId: string, runner?: string) => stores.pool().query(text, runner === undefined ? [taskId] : [taskId, runner]);
    const runnerOnTask = async (taskId: string) =>
      (await stores.pool().query(`SELECT runner_id FROM ${schema}.tasks WHERE task_id = $1`, [taskId])).rows[0].runner_id;

    // A lease this version wrote, taken over by an older instance's claim and then released by it.
    const own = await first.leases.createLeasedTask({ toolName: TOOL });
    await eventually('its first heartbeat lists it', async () => (await sql(`SELECT FROM ${schema}.task_leases WHERE task_id = $1`, own.taskId)).rowCount === 1);
    await sql(`UPDATE ${schema}.task_leases SET runner_id = $2 WHERE task_id = $1`, own.taskId, second.leases.runnerId);
    expect(await runnerOnTask(own.taskId)).toBe(second.leases.runnerId);
    expect(await first.setStatus(own.taskId, 'working', 'lost it'), 'the runner the claim replaced').toBe(false);
    expect(await second.setStatus(own.taskId, 'working', 'claimed')).toBe(true);
    await sql(`DELETE FROM ${schema}.task_leases WHERE task_id = $1`, own.taskId);
    expect(await runnerOnTask(own.taskId), 'the release cleared the task row').toBe(null);
    expect(await third.setStatus(own.taskId, 'working', 'no lease left')).toBe(true);

    // A lease an older instance wrote: its rescue for a resume, a claim, and a release.
    const { taskId } = await third.createTask({ toolName: TOOL });
    await sql(`INSERT INTO ${schema}.task_leases (task_id, runner_id, expires_at, acquired_at) VALUES ($1, $2, now() + interval '1 minute', now())`, taskId, first.leases.runnerId);
    await sql(`UPDATE ${schema}.task_leases SET runner_id = NULL WHERE task_id = $1`, taskId);
    expect(await runnerOnTask(taskId), 'waiting for a resume').toBe('');
    expect(await first.setStatus(taskId, 'working', 'rescued from it'), 'the lost runner').toBe(false);
    expect(await second.leases.acquireLease(taskId), 'a lease on a task waiting for a resume').toBe(false);
    await sql(`UPDATE ${schema}.task_leases SET runner_id = $2 WHERE task_id = $1`, taskId, second.leases.runnerId);
    expect(await second.setStatus(taskId, 'working', 'resumed')).toBe(true);
    expect(await first.completeTask(taskId, done)).toBe(false);
    await sql(`DELETE FROM ${schema}.task_leases WHERE task_id = $1`, taskId);
    expect(await third.leases.acquireLease(taskId), 'a lease on a task no runner holds').toBe(true);
    expect(await second.completeTask(taskId, done), 'the runner that released it').toBe(false);
    expect(await third.completeTask(taskId, done)).toBe(true);
    expect(await runnerOnTask(taskId), 'a settled task names no runner').toBe(null);
  });
});
