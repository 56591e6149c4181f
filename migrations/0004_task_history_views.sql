-- 0004: history that outlives its task, and two views that read it.
--
-- Until now a task's history went with its tombstone, a few minutes after expiry, and named
-- neither the tool nor the owner, so questions about the past ("which tool fails most?") could
-- only be asked of live tasks. Now every history row carries the task's tool and owner, and the
-- reaper keeps a task's history for its own retention window (historyRetentionMs, default 7 days,
-- measured from the task's creation), long after the task and its tombstone are gone.

-- Copied from the task by the statement that writes the row. tool_name is NULL only in rows older
-- than this migration whose task had already expired (a tombstone keeps the owner, not the tool),
-- and in rows written by an instance of an older version during a rolling upgrade. owner is NULL
-- for a task created without a principal, as in tasks, or when nothing was left to copy it from.
ALTER TABLE {{schema}}.task_history
  ADD COLUMN tool_name text,
  ADD COLUMN owner     text;

UPDATE {{schema}}.task_history AS h
   SET tool_name = source.tool_name, owner = source.owner
  FROM (
    SELECT task_id, tool_name, owner FROM {{schema}}.tasks
    UNION ALL
    SELECT s.task_id, NULL, s.owner FROM {{schema}}.tombstones AS s
     WHERE NOT EXISTS (SELECT 1 FROM {{schema}}.tasks AS t WHERE t.task_id = s.task_id)
  ) AS source
 WHERE source.task_id = h.task_id;

-- The reaper's history phase finds tasks by the age of their creation row (one per task), oldest
-- first; the primary key then finds the rest of each timeline.
CREATE INDEX task_history_created_idx ON {{schema}}.task_history (at) WHERE from_status IS NULL;

-- When each reaper phase last ran and what it did, upserted once at the end of the phase by
-- whichever instance ran it (the command line's `status` reads it). A phase another instance was
-- already running counts for that instance only. Rows are tasks: tombstoned, tombstones purged,
-- timelines deleted.
CREATE TABLE {{schema}}.reaper_activity (
  phase            text        PRIMARY KEY CHECK (phase IN ('tombstone', 'purge', 'history')),
  last_started_at  timestamptz,
  last_finished_at timestamptz,
  last_rows        bigint,     -- in the last run of the phase
  total_rows       bigint      -- in every run since the row was created
);

-- One row per history row, numbered within its task. Durations are in milliseconds, rounded.
CREATE VIEW {{schema}}.task_transitions AS
SELECT task_id,
       tool_name,
       owner,
       row_number() OVER timeline AS seq,                    -- 1 for the creation
       at,
       from_status,                                          -- NULL for the creation
       to_status,
       message,
       -- How long the task was in from_status: since the row before. NULL for the creation.
       (extract(epoch FROM at - lag(at) OVER timeline) * 1000)::bigint AS previous_state_ms
  FROM {{schema}}.task_history
WINDOW timeline AS (PARTITION BY task_id ORDER BY id);

-- One row per task that has history, live or long gone. Durations are in milliseconds.
--
-- input_required_ms adds up the stints in input_required that a later transition ended. A stint
-- still going on is left out, so the value never moves by itself: while the task is live, that
-- stint has lasted now() - last_transition_at; once the task expired its end is not recorded.
CREATE VIEW {{schema}}.task_summaries AS
SELECT task_id,
       tool_name,
       owner,
       status,
       created_at,
       last_transition_at,
       settled_at,
       first_input_required_at,
       (extract(epoch FROM first_input_required_at - created_at) * 1000)::bigint AS time_to_first_input_ms,
       input_required_ms,
       (extract(epoch FROM settled_at - created_at) * 1000)::bigint AS total_ms, -- NULL until settled
       transitions,
       -- A row in tasks: running, settled or expired but not yet reaped.
       EXISTS (SELECT 1 FROM {{schema}}.tasks AS t WHERE t.task_id = summary.task_id) AS live
  FROM (
    SELECT task_id,
           max(tool_name) AS tool_name, -- the same on every row of a task
           max(owner) AS owner,
           (array_agg(to_status ORDER BY seq DESC))[1] AS status,
           min(at) FILTER (WHERE from_status IS NULL) AS created_at,
           max(at) AS last_transition_at,
           min(at) FILTER (WHERE to_status IN ('completed', 'failed', 'cancelled')) AS settled_at,
           min(at) FILTER (WHERE to_status = 'input_required') AS first_input_required_at,
           coalesce(sum(previous_state_ms) FILTER (WHERE from_status = 'input_required'), 0)::bigint AS input_required_ms,
           count(*) AS transitions -- history rows, the creation included
      FROM {{schema}}.task_transitions
     GROUP BY task_id
  ) AS summary;
