/**
 * Bulk-loads a migrated schema with tasks as a server that has run for a week would hold them,
 * in set-based SQL (a million tasks in about a minute): a mix of statuses, owners of very
 * different sizes, rows that expired but are not reaped yet, tasks that never expire, a history
 * row per transition, input requests (outstanding, answered), and tombstones.
 */
import type pg from 'pg';

export interface TaskMix {
  tasks: number;
  /** Share of tasks past their deadline but not reaped yet (default 0.02: a reaper interval's worth). */
  expiredShare?: number;
  /** Tombstones, as a share of tasks (default 0.05). */
  tombstoneShare?: number;
  /** Tasks per owner on average (default 100); sizes are skewed, a few owners hold many. */
  tasksPerOwner?: number;
}

export interface LoadedRows {
  tasks: number;
  history: number;
  inputRequests: number;
  tombstones: number;
  seconds: number;
}

const CHUNK = 200_000;

/** Owners the mix spreads its tasks over. */
export function ownerCount(mix: TaskMix): number {
  return Math.max(1, Math.round(mix.tasks / (mix.tasksPerOwner ?? 100)));
}

/** SQL for one owner drawn as the mix draws them (skewed: a few own many), from `random` in [0, 1). */
export const drawnOwner = (owners: string, random: string) => `'owner-' || floor(${owners} * ${random} ^ 3)::int`;

/**
 * Status by share: completed 55 %, failed 10 %, cancelled 5 %, working 20 %, input_required 10 %.
 * A third of the finished tasks went through one round of input (two more history rows, an
 * answered request). Tasks were created over the last 7 days, in row order; live ones expire up to
 * a day from now, or never (5 %); expired ones ran out in the last 30 seconds.
 */
function chunkStatement(schema: string): string {
  return `
    WITH drawn AS (
      SELECT i, random() AS r_owner, random() AS r_size, random() AS r_status, random() AS r_expired,
             random() AS r_age, random() AS r_ttl, random() AS r_input
        FROM generate_series($1::int, $2::int) AS i
    ), shaped AS (
      SELECT md5('task ' || i) AS task_id,
             CASE WHEN r_owner < 0.1 THEN NULL ELSE ${drawnOwner('$4::int', 'r_size')} END AS owner,
             CASE WHEN r_status < 0.55 THEN 'completed' WHEN r_status < 0.65 THEN 'failed'
                  WHEN r_status < 0.70 THEN 'cancelled' WHEN r_status < 0.90 THEN 'working'
                  ELSE 'input_required' END AS status,
             r_expired < $3::float8 AS expired,
             r_age, r_ttl, r_input < 0.33 AS had_input, i
        FROM drawn
    ), timed AS (
      -- Rows are written in creation order, as a server writes them.
      SELECT *, now() - interval '7 days' * (1 - i::float8 / $5::int) AS created_at
        FROM shaped
    ), rows AS (
      SELECT *,
             CASE WHEN expired THEN greatest(0, extract(epoch FROM now() - created_at) * 1000 - r_ttl * 30000)::bigint
                  WHEN r_ttl < 0.05 THEN NULL
                  ELSE (extract(epoch FROM now() - created_at) * 1000 + r_ttl * 86400000)::bigint END AS ttl_ms,
             least(now(), created_at + (r_age * 60) * interval '1 second') AS settled_at
        FROM timed
    ), inserted AS (
      INSERT INTO ${schema}.tasks
        (task_id, owner, tool_name, arguments, status, previous_status, status_message, created_at,
         last_updated_at, ttl_ms, expires_at, result, error, cancel_requested_at)
      SELECT task_id, owner, 'tool_' || (i % 20),
             jsonb_build_object('query', 'report for quarter ' || (i % 4 + 1), 'rows', i % 1000, 'format', 'pdf'),
             status, CASE WHEN status = 'working' THEN NULL ELSE 'working' END,
             CASE status WHEN 'completed' THEN 'Task completed' WHEN 'failed' THEN 'Task failed: upstream timeout'
                         WHEN 'cancelled' THEN 'Task cancelled' WHEN 'input_required' THEN 'Waiting for input'
                         ELSE 'step 3 of 7' END,
             created_at, CASE WHEN status = 'working' THEN created_at ELSE settled_at END,
             ttl_ms, created_at + ttl_ms * interval '1 millisecond',
             CASE WHEN status = 'completed' THEN jsonb_build_object('content', jsonb_build_array(jsonb_build_object(
               'type', 'text', 'text', 'Report ready: ' || repeat('summary line. ', 8)))) END,
             CASE WHEN status = 'failed' THEN '{"code": -32603, "message": "upstream timeout"}'::jsonb END,
             CASE WHEN status = 'cancelled' THEN settled_at END
        FROM rows
      RETURNING task_id, status, created_at, last_updated_at, status_message
    ), with_input AS (
      SELECT inserted.*, rows.had_input FROM inserted JOIN rows USING (task_id)
    ), history AS (
      INSERT INTO ${schema}.task_history (task_id, at, from_status, to_status, message)
      SELECT task_id, at, from_status, to_status, message
        FROM with_input CROSS JOIN LATERAL (VALUES
          (1, created_at, NULL, 'working', 'Task started', true),
          (2, created_at + interval '1 second', 'working', 'input_required', 'Waiting for input',
              had_input AND status IN ('completed', 'failed', 'cancelled')),
          (3, created_at + interval '2 seconds', 'input_required', 'working', 'Input received',
              had_input AND status IN ('completed', 'failed', 'cancelled')),
          (4, last_updated_at, 'working', status, status_message, status <> 'working')
        ) AS h(step, at, from_status, to_status, message, present)
       WHERE present
       ORDER BY task_id, step
      RETURNING 1
    ), requests AS (
      INSERT INTO ${schema}.input_requests (task_id, request_key, request, state, response, issued_at, settled_at)
      SELECT task_id, 'confirm',
             '{"method": "elicitation/create", "params": {"message": "Include the appendix?", "requestedSchema": {"type": "object"}}}'::jsonb,
             CASE WHEN status = 'input_required' THEN 'outstanding' ELSE 'answered' END,
             CASE WHEN status = 'input_required' THEN NULL ELSE '{"action": "accept", "content": {"appendix": true}}'::jsonb END,
             created_at + interval '1 second',
             CASE WHEN status = 'input_required' THEN NULL ELSE created_at + interval '2 seconds' END
        FROM with_input
       WHERE status = 'input_required' OR (had_input AND status IN ('completed', 'failed', 'cancelled'))
      RETURNING 1
    )
    SELECT (SELECT count(*) FROM inserted)::int AS tasks, (SELECT count(*) FROM history)::int AS history,
           (SELECT count(*) FROM requests)::int AS input_requests`;
}

export async function loadTaskMix(
  pool: pg.Pool,
  schema: string,
  mix: TaskMix,
  onProgress?: (loaded: number) => void,
): Promise<LoadedRows> {
  const startedAt = performance.now();
  const owners = ownerCount(mix);
  const totals: LoadedRows = { tasks: 0, history: 0, inputRequests: 0, tombstones: 0, seconds: 0 };
  const statement = chunkStatement(schema);
  for (let first = 1; first <= mix.tasks; first += CHUNK) {
    const last = Math.min(mix.tasks, first + CHUNK - 1);
    const { rows } = await pool.query<{ tasks: number; history: number; input_requests: number }>(statement, [
      first,
      last,
      mix.expiredShare ?? 0.02,
      owners,
      mix.tasks,
    ]);
    totals.tasks += rows[0]!.tasks;
    totals.history += rows[0]!.history;
    totals.inputRequests += rows[0]!.input_requests;
    onProgress?.(last);
  }
  const tombstones = Math.round(mix.tasks * (mix.tombstoneShare ?? 0.05));
  const { rowCount } = await pool.query(
    `INSERT INTO ${schema}.tombstones (task_id, owner, expired_at, tombstoned_at)
     SELECT md5('tombstone ' || i), 'owner-' || (i % $2::int), now() - random() * interval '4 minutes', now()
       FROM generate_series(1, $1::int) AS i`,
    [tombstones, owners],
  );
  totals.tombstones = rowCount ?? 0;
  await pool.query(`VACUUM ANALYZE ${schema}.tasks, ${schema}.task_history, ${schema}.input_requests, ${schema}.tombstones`);
  totals.seconds = (performance.now() - startedAt) / 1000;
  return totals;
}
