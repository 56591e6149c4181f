/**
 * A task's execution lease (migration 0012's `execution_leases`, see src/cli/lease-queries.ts):
 * which runner holds it and until when, and the runs it outlived. Read only where the schema has
 * leases, so the dashboard also serves a schema from before them.
 */
import { sql } from 'kysely';
import type { CliDatabase } from '../database.js';
import { leaseRelation } from '../lease-queries.js';

export interface TaskLease {
  /** null: rescued, waiting for an instance with the tool's resume hook. */
  runnerId: string | null;
  acquiredAt: Date;
  expiresAt: Date;
  /** Past expiresAt: the runner stopped renewing, the rescuer's next pass takes the task. */
  overdue: boolean;
  /** Rescues so far. */
  attempts: number;
  /** The runner whose lease ran out last. */
  lostRunner: string | null;
}

export async function readTaskLease(database: CliDatabase, taskId: string): Promise<TaskLease | null> {
  const leases = await leaseRelation(database);
  if (leases === null) return null;
  const { rows } = await sql<{ runner_id: string | null; acquired_at: Date; expires_at: Date; overdue: boolean; attempts: number; lost_runner: string | null }>`
    SELECT runner_id, acquired_at, expires_at, expires_at < now() AS overdue, attempts, lost_runner
      FROM ${leases} WHERE task_id = ${taskId}`.execute(database.db);
  const row = rows[0];
  if (!row) return null;
  return { runnerId: row.runner_id, acquiredAt: row.acquired_at, expiresAt: row.expires_at, overdue: row.overdue, attempts: row.attempts, lostRunner: row.lost_runner };
}
