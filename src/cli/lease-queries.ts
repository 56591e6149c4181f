/**
 * The SQL behind what `status`, `tasks` and `show` say about execution leases (migration 0007):
 * who runs a working task and until when, and the rescues of tasks whose runner died.
 */
import { sql } from 'kysely';
import type { CliDatabase } from './database.js';

/**
 * Where the schema keeps its leases: the `execution_leases` view (migration 0012), which also
 * shows the tasks a runner has not yet listed in `task_leases`; that table alone on a schema from
 * 0007 to 0011; null before leases.
 */
export async function leaseRelation(database: CliDatabase): Promise<ReturnType<typeof sql.table> | null> {
  const { rows } = await sql<{ view: boolean; table: boolean }>`
    SELECT to_regclass(${`${database.schema}.execution_leases`}) IS NOT NULL AS view,
           to_regclass(${`${database.schema}.task_leases`}) IS NOT NULL AS table`.execute(database.db);
  const found = rows[0]!;
  if (!found.table) return null;
  return sql.table(`${database.schema}.${found.view ? 'execution_leases' : 'task_leases'}`);
}

export interface TaskLeaseLine {
  /** null: rescued, waiting for an instance to resume it. */
  runnerId: string | null;
  expiresAt: Date;
  /** Rescues so far. */
  attempts: number;
  /** Whether the deadline has passed (the rescuer's next pass takes the task). */
  overdue: boolean;
}

/** The leases of some tasks, by task id. */
export async function readLeases(database: CliDatabase, taskIds: string[]): Promise<Map<string, TaskLeaseLine>> {
  const leases = taskIds.length === 0 ? null : await leaseRelation(database);
  if (leases === null) return new Map();
  const { rows } = await sql<{ task_id: string; runner_id: string | null; expires_at: Date; attempts: number; overdue: boolean }>`
    SELECT task_id, runner_id, expires_at, attempts, expires_at < now() AS overdue
      FROM ${leases} WHERE task_id = ANY(${taskIds}::text[])`.execute(database.db);
  return new Map(rows.map((row) => [row.task_id, { runnerId: row.runner_id, expiresAt: row.expires_at, attempts: row.attempts, overdue: row.overdue }]));
}

export interface RescueLine {
  at: Date;
  lostRunner: string | null;
  rescuedBy: string;
  outcome: 'failed' | 'resumed';
}

export async function readRescues(database: CliDatabase, taskId: string): Promise<RescueLine[]> {
  const { rows } = await sql<{ at: Date; lost_runner: string | null; rescued_by: string; outcome: 'failed' | 'resumed' }>`
    SELECT at, lost_runner, rescued_by, outcome FROM ${sql.table(`${database.schema}.task_rescues`)}
     WHERE task_id = ${taskId} ORDER BY at`.execute(database.db);
  return rows.map((row) => ({ at: row.at, lostRunner: row.lost_runner, rescuedBy: row.rescued_by, outcome: row.outcome }));
}

export interface LeaseSummary {
  /** Leases held, by runner: the instances running tasks now. */
  runners: { runnerId: string; leases: number; overdue: number }[];
  /** Rescued tasks waiting for an instance with the tool's resume hook. */
  awaitingResume: number;
  /** Rescues in the last 24 hours, by outcome. */
  rescuedLastDay: { failed: number; resumed: number };
}

/** null where the schema predates leases (before 0007). */
export async function leaseSummary(database: CliDatabase): Promise<LeaseSummary | null> {
  const leases = await leaseRelation(database);
  if (leases === null) return null;
  const [{ rows: runners }, { rows: rescued }] = await Promise.all([
    sql<{ runner_id: string | null; leases: number; overdue: number }>`
      SELECT runner_id, count(*)::int AS leases, count(*) FILTER (WHERE expires_at < now())::int AS overdue
        FROM ${leases} GROUP BY runner_id ORDER BY runner_id NULLS LAST`.execute(database.db),
    sql<{ failed: number; resumed: number }>`
      SELECT count(*) FILTER (WHERE outcome = 'failed')::int AS failed, count(*) FILTER (WHERE outcome = 'resumed')::int AS resumed
        FROM ${sql.table(`${database.schema}.task_rescues`)} WHERE at > now() - interval '1 day'`.execute(database.db),
  ]);
  return {
    runners: runners.filter((row) => row.runner_id !== null).map((row) => ({ runnerId: row.runner_id!, leases: row.leases, overdue: row.overdue })),
    awaitingResume: runners.find((row) => row.runner_id === null)?.leases ?? 0,
    rescuedLastDay: rescued[0] ?? { failed: 0, resumed: 0 },
  };
}

/** A lease as one line: "runner R until T" (overdue when past it), or waiting for a resume. */
export function describeLease(lease: TaskLeaseLine | undefined): string {
  if (!lease) return '-';
  const rescues = lease.attempts > 0 ? `, ${lease.attempts} rescue${lease.attempts === 1 ? '' : 's'}` : '';
  if (lease.runnerId === null) return `awaiting a resume by ${lease.expiresAt.toISOString()}${rescues}`;
  return `${lease.runnerId} until ${lease.expiresAt.toISOString()}${lease.overdue ? ' (overdue: its runner stopped renewing)' : ''}${rescues}`;
}
