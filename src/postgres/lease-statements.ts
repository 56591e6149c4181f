/**
 * The SQL of execution leases (migrations 0007 and 0011): the condition the task statements use to
 * respect a lease, the CTE that ends one, and the statements of the lease keeper and the rescuer.
 *
 * The task row names the runner holding its lease (`tasks.runner_id`), so a transition checks the
 * lease on the row it locks; PostgreSQL re-checks the condition on the row's latest version after
 * waiting for its lock, so a runner that lost its lease to a rescue is refused even in a race with
 * it. Every statement that touches both a task and its lease locks the task row first.
 */
import { sql, type RawBuilder } from 'kysely';
import { compileQuery } from './compiled-query.js';
import type { StoreDatabase } from './tables.js';
import { RESUMING_PREFIX } from '../contract/leases.js';
import { isLive, isOpen, withinLockTimeout } from './task-rows.js';

/**
 * A condition on the task row: the task has no lease, or `runner` holds it, or `runner` is null (a
 * client's call, such as an answer, which any instance may record). A task waiting for a resume
 * ('') is written by clients only.
 */
export function leaseAllows(runner: unknown): RawBuilder<boolean> {
  return sql<boolean>`(${runner}::text IS NULL OR runner_id IS NULL OR runner_id = ${runner}::text)`;
}

/** A CTE (to follow `WITH … ,`) deleting the leases of the tasks `settled` selects the ids of. */
export function endingLeases({ tables }: StoreDatabase, settled: RawBuilder<unknown>): RawBuilder<unknown> {
  return sql`lease_ended AS (DELETE FROM ${tables.task_leases} WHERE task_id IN (${settled}))`;
}

/** {@link isLive} of `t`, the tasks table joined to its leases (both have an expires_at). */
const taskIsLive = sql<boolean>`(t.expires_at IS NULL OR t.expires_at > now())`;

/** A lease deadline `leaseMs` from now, on the database clock. */
const deadline = (leaseMs: unknown) => sql`now() + ${leaseMs}::float8 * interval '1 millisecond'`;

type Runner = { runnerId: string };
type Leasing = Runner & { leaseMs: number };
/** This runner's tasks not yet in task_leases, and all it holds. */
type Listing = Runner & { listIds: string[]; renewIds: string[] };

/**
 * CTEs (to follow `WITH`) giving this runner's leases the deadline `until`: the listed ones are
 * renewed, the others get their lease row, taken as of the task's creation. `held` selects the ids
 * of the leases the runner still holds; a task it lost (rescued, cancelled elsewhere) is not there.
 */
function listingAndRenewing(
  { tables }: StoreDatabase,
  param: <K extends keyof Listing>(name: K) => Listing[K],
  until: RawBuilder<unknown>,
): RawBuilder<unknown> {
  return sql`
    listed AS (
      UPDATE ${tables.tasks} SET leased = true
       WHERE task_id = ANY(${param('listIds')}::text[]) AND runner_id = ${param('runnerId')}::text AND NOT leased AND ${isOpen}
      RETURNING task_id, created_at),
    inserted AS (
      INSERT INTO ${tables.task_leases} (task_id, runner_id, expires_at, acquired_at, task_synced)
      SELECT task_id, ${param('runnerId')}, ${until}, created_at, true FROM listed
      RETURNING task_id),
    renewed AS (
      UPDATE ${tables.task_leases} SET expires_at = ${until}
       WHERE runner_id = ${param('runnerId')} AND task_id = ANY(${param('renewIds')}::text[])
      RETURNING task_id),
    held AS (SELECT task_id FROM inserted UNION ALL SELECT task_id FROM renewed)`;
}

/** Migration 0012's deadline of a runner, shared by its leases not yet listed. */
const runnerDeadline = sql`(beat_at + lease_ms * interval '1 millisecond')`;

/** The tasks `t` a runner created and has not listed yet: all created at or after its listed_from. */
const unlistedBy = (runnerId: unknown, listedFrom: unknown) =>
  sql<boolean>`(t.created_at >= ${listedFrom} AND t.runner_id = ${runnerId}::text AND NOT t.leased)`;
export type RescuedRow = { task_id: string; tool_name: string; runner_id: string | null; lost_runner: string | null; expires_at: Date; attempts: number };
export type DeadRunner = { runner_id: string; listed_from: Date; expires_at: Date };
export type ClaimedRow = { task_id: string; attempts: number; lost_runner: string | null; lost_status: string | null };

export function leaseStatements(database: StoreDatabase) {
  const { db, tables } = database;
  return {
    /** Takes or renews this runner's lease on a live, open task no other runner holds. */
    acquire: compileQuery<Leasing & { taskId: string; lockTimeout: string }, { task_id: string }>(db, (param) => sql`
      WITH taken AS (
             UPDATE ${tables.tasks} SET runner_id = ${param('runnerId')}, leased = true
              WHERE task_id = ${param('taskId')} AND ${isOpen} AND ${isLive}
                AND ${leaseAllows(param('runnerId'))} AND ${withinLockTimeout(param('lockTimeout'))}
             RETURNING task_id)
      INSERT INTO ${tables.task_leases} (task_id, runner_id, expires_at, acquired_at, task_synced)
      SELECT task_id, ${param('runnerId')}, ${deadline(param('leaseMs'))}, now(), true FROM taken
      ON CONFLICT (task_id) DO UPDATE SET expires_at = excluded.expires_at
      RETURNING task_id`),

    /** Ends this runner's lease on a task it leaves open (one waiting for input). */
    release: compileQuery<Runner & { taskId: string; lockTimeout: string }, { task_id: string }>(db, (param) => sql`
      WITH released AS (
             UPDATE ${tables.tasks} SET runner_id = NULL
              WHERE task_id = ${param('taskId')} AND runner_id = ${param('runnerId')}::text AND ${withinLockTimeout(param('lockTimeout'))}
             RETURNING task_id),
           ${endingLeases(database, sql`SELECT task_id FROM released`)}
      SELECT task_id FROM released`),

    /**
     * The heartbeat, one statement however many tasks: keeps this runner alive (migration 0012),
     * lists the tasks it created since its last beat (their lease rows), and renews its listed
     * leases. Returns the database clock, truncated as creation times are, and the tasks it still
     * holds.
     */
    beat: compileQuery<Leasing & Listing & { listedFromMs: number | null }, { clock_ms: number; task_ids: string[] }>(db, (param) => sql`
      WITH runner AS (
             INSERT INTO ${tables.lease_runners} AS r (runner_id, lease_ms, started_at, beat_at, listed_from)
             VALUES (${param('runnerId')}, ${param('leaseMs')}, now(), now(),
                     coalesce(to_timestamp(${param('listedFromMs')}::float8 / 1000), date_trunc('milliseconds', now())))
             ON CONFLICT (runner_id) DO UPDATE
                SET lease_ms = excluded.lease_ms, beat_at = excluded.beat_at,
                    listed_from = coalesce(to_timestamp(${param('listedFromMs')}::float8 / 1000), r.listed_from)),
           ${listingAndRenewing(database, param, deadline(param('leaseMs')))}
      SELECT (extract(epoch FROM date_trunc('milliseconds', now())) * 1000)::float8 AS clock_ms,
             ARRAY(SELECT task_id::text FROM held) AS task_ids`),

    /** Makes this runner's leases due now, for the next rescuer pass, listing those not yet listed. */
    abandon: compileQuery<Runner & Listing, never>(db, (param) => sql`
      WITH ${listingAndRenewing(database, param, sql`now()`)}
      SELECT count(*) FROM held`),

    /**
     * Rescued tasks of the given tools waiting for a resume, taken by this runner. It writes the
     * lease's runner only: migration 0011's trigger copies it to the task row, locked here already.
     */
    claim: compileQuery<Leasing & { toolNames: string[]; limit: number }, ClaimedRow>(db, (param) => sql`
      UPDATE ${tables.task_leases}
         SET runner_id = ${param('runnerId')}, expires_at = ${deadline(param('leaseMs'))}, acquired_at = now()
       WHERE task_id = ANY(ARRAY(
         SELECT l.task_id FROM ${tables.task_leases} AS l JOIN ${tables.tasks} AS t USING (task_id)
          WHERE l.runner_id IS NULL AND t.tool_name = ANY(${param('toolNames')}::text[])
            AND t.status = 'working' AND ${taskIsLive}
          ORDER BY l.expires_at
          LIMIT ${param('limit')}
            FOR UPDATE OF l, t SKIP LOCKED))
      RETURNING task_id, attempts, lost_runner, lost_status`),

    leaseOf: compileQuery<{ taskId: string }, { runner_id: string | null; expires_at: Date; attempts: number; lost_runner: string | null }>(
      db,
      (param) =>
        db
          .selectFrom('execution_leases')
          .select(['runner_id', 'expires_at', 'attempts', 'lost_runner'])
          .where('task_id', '=', param('taskId')),
    ),

    /**
     * The rescuer's batch: expired leases of running tasks, locked with their task rows (the lease
     * first); rows another transaction holds are left to the next pass.
     */
    expired: compileQuery<{ limit: number }, RescuedRow>(db, (param) => sql`
      SELECT l.task_id, t.tool_name, l.runner_id, l.lost_runner, l.expires_at, l.attempts
        FROM ${tables.task_leases} AS l JOIN ${tables.tasks} AS t USING (task_id)
       WHERE l.expires_at < now() AND t.status = 'working' AND ${taskIsLive}
       ORDER BY l.expires_at
       LIMIT ${param('limit')}
         FOR UPDATE OF l, t SKIP LOCKED`),

    /** Runners whose deadline passed: their tasks not yet listed are the rescuer's too. */
    deadRunners: compileQuery<Record<string, never>, DeadRunner>(db, () => sql`
      SELECT runner_id, listed_from, ${runnerDeadline} AS expires_at FROM ${tables.lease_runners}
       WHERE ${runnerDeadline} < now()`),

    /** The rescuer's batch of a dead runner's tasks not yet listed, found by creation time. */
    unlisted: compileQuery<{ runnerId: string; listedFrom: Date; expiresAt: Date; limit: number }, RescuedRow>(db, (param) => sql`
      SELECT task_id, tool_name, runner_id, NULL::text AS lost_runner, ${param('expiresAt')}::timestamptz AS expires_at, 0 AS attempts
        FROM ${tables.tasks} AS t
       WHERE ${unlistedBy(param('runnerId'), param('listedFrom'))} AND t.status = 'working' AND ${taskIsLive}
       ORDER BY t.created_at
       LIMIT ${param('limit')}
         FOR UPDATE SKIP LOCKED`),

    /**
     * Forgets the dead runners no open task is left unlisted by. A heartbeat that renewed a runner
     * meanwhile keeps it: the deadline is checked again on the row's latest version.
     */
    forgetDeadRunners: compileQuery<Record<string, never>, never>(db, () => sql`
      DELETE FROM ${tables.lease_runners} AS r
       WHERE ${runnerDeadline} < now()
         AND NOT EXISTS (
           SELECT FROM ${tables.tasks} AS t
            WHERE ${unlistedBy(sql`r.runner_id`, sql`r.listed_from`)} AND t.status IN ('working', 'input_required') AND ${taskIsLive})`),

    /** Fails rescued tasks, with the history naming who was lost and who rescued, and ends their leases. */
    failRescued: compileQuery<Runner & { rescuedJson: string }, { task_id: string }>(db, (param) => sql`
      WITH rescued AS (
             SELECT * FROM jsonb_to_recordset(${param('rescuedJson')}::jsonb)
                        AS r(task_id text, lost_runner text, error jsonb, message text)),
           changed AS (
             UPDATE ${tables.tasks} AS t
                SET previous_status = t.status, status = 'failed', status_message = r.message, error = r.error,
                    runner_id = NULL, last_updated_at = now()
               FROM rescued AS r
              WHERE t.task_id = r.task_id AND t.status = 'working'
             RETURNING t.task_id, t.tool_name, t.owner, t.last_updated_at, t.previous_status, t.status, t.status_message, r.lost_runner),
           history AS (
             INSERT INTO ${tables.task_history}
                    (task_id, tool_name, owner, at, from_status, to_status, message, lost_runner, rescued_by)
             SELECT task_id, tool_name, owner, last_updated_at, previous_status, status, status_message, lost_runner,
                    ${param('runnerId')}
               FROM changed),
           ${endingLeases(database, sql`SELECT task_id FROM changed`)}
      SELECT task_id FROM changed`),

    /** Hands rescued tasks on: no runner until one claims the lease, which is due again a lease from now. */
    resumeRescued: compileQuery<Leasing & { rescuedJson: string }, { task_id: string }>(db, (param) => sql`
      WITH rescued AS (
             SELECT * FROM jsonb_to_recordset(${param('rescuedJson')}::jsonb) AS r(task_id text, lost_runner text, message text)),
           -- A task rescued before its runner listed it gets its lease row here.
           released AS (
             INSERT INTO ${tables.task_leases} AS l
                    (task_id, runner_id, expires_at, acquired_at, attempts, lost_runner, lost_status, task_synced)
             SELECT r.task_id, NULL, ${deadline(param('leaseMs'))}, t.created_at, 1, r.lost_runner, t.status_message, true
               FROM rescued AS r JOIN ${tables.tasks} AS t USING (task_id)
             ON CONFLICT (task_id) DO UPDATE
                SET runner_id = NULL, lost_runner = excluded.lost_runner, attempts = l.attempts + 1,
                    expires_at = excluded.expires_at,
                    -- The message before this statement's; a resumed run lost before it reported
                    -- any progress keeps the progress of the run before it.
                    lost_status = CASE WHEN excluded.lost_status LIKE ${sql.lit(`${RESUMING_PREFIX}%`)} THEN l.lost_status ELSE excluded.lost_status END
             RETURNING l.task_id),
           changed AS (
             UPDATE ${tables.tasks} AS t
                SET previous_status = t.status, status_message = r.message, runner_id = '', leased = true, last_updated_at = now()
               FROM rescued AS r
              WHERE t.task_id = r.task_id AND t.task_id IN (SELECT task_id FROM released)
             RETURNING t.task_id, t.tool_name, t.owner, t.last_updated_at, t.status, t.status_message, r.lost_runner),
           history AS (
             INSERT INTO ${tables.task_history}
                    (task_id, tool_name, owner, at, from_status, to_status, message, lost_runner, rescued_by)
             SELECT task_id, tool_name, owner, last_updated_at, status, status, status_message, lost_runner, ${param('runnerId')}
               FROM changed)
      SELECT task_id FROM changed`),
  };
}

export type LeaseStatements = ReturnType<typeof leaseStatements>;
