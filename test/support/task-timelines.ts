/**
 * Explicit times for a task's history, so that the durations the views compute are exact: a real
 * lifecycle writes the rows, then this moves them to chosen instants.
 */
import type pg from 'pg';

/** The task's history rows, oldest first, get `start` plus each offset (as many as there are rows). */
export async function setTimeline(pool: pg.Pool, schema: string, taskId: string, start: Date, offsetsMs: number[]): Promise<void> {
  const { rowCount } = await pool.query(
    `UPDATE ${schema}.task_history AS h
        SET at = $2::timestamptz + o.offset_ms * interval '1 millisecond'
       FROM (SELECT id, row_number() OVER (ORDER BY id) AS seq FROM ${schema}.task_history WHERE task_id = $1) AS n
       JOIN unnest($3::numeric[]) WITH ORDINALITY AS o(offset_ms, seq) ON o.seq = n.seq
      WHERE h.task_id = $1 AND h.id = n.id`,
    [taskId, start, offsetsMs],
  );
  const { rows } = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${schema}.task_history WHERE task_id = $1`, [
    taskId,
  ]);
  if (rowCount !== offsetsMs.length || rows[0]!.n !== offsetsMs.length) {
    throw new Error(`task ${taskId} has ${rows[0]!.n} history rows, ${offsetsMs.length} offsets given`);
  }
}
