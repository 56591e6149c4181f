-- 0007: execution leases, so a task whose runner died is rescued instead of sitting in `working`
-- until its TTL.
--
-- A store instance that runs a task (the SDK integration and the router do, for every tool task)
-- holds a lease on it: one row here, with the runner's id and a deadline on the database clock.
-- The instance renews every lease it holds with one UPDATE per heartbeat. When the deadline
-- passes, the runner is presumed dead, and the rescuer (run by one instance at a time, like the
-- reaper's phases) fails the task or hands it to a resume hook, by the tool's policy.
--
-- The lease lives beside the task, not in it: heartbeats then touch this small table only, and
-- the transitions on `tasks` stay HOT updates. A transition that settles or cancels a task
-- deletes its lease in the same statement, holding the lease row's lock before the task row's
-- (every writer of both takes them in that order). While the task is `input_required` the
-- rescuer leaves it alone whatever the deadline: waiting for a person is not a dead runner.
CREATE TABLE {{schema}}.task_leases (
  task_id     {{schema}}.task_id PRIMARY KEY,
  -- '<host>:<pid>:<random>' of the store instance running the task. NULL: rescued for a resume,
  -- waiting for an instance with the tool's resume hook to claim it by expires_at.
  runner_id   text CHECK (runner_id <> ''),
  expires_at  timestamptz NOT NULL,
  acquired_at timestamptz NOT NULL,
  attempts    integer     NOT NULL DEFAULT 0 CHECK (attempts >= 0), -- rescues so far
  lost_runner text,        -- the runner whose lease expired last, named to whoever resumes
  lost_status text         -- the last progress message that runner reported, for the resume
);

-- The rescuer finds expired leases, oldest first; a heartbeat finds one runner's leases.
CREATE INDEX task_leases_expires_idx ON {{schema}}.task_leases (expires_at);
CREATE INDEX task_leases_runner_idx ON {{schema}}.task_leases (runner_id);

-- A rescue is a history row: the failure it records (working -> failed), or a resume
-- (working -> working, the only history row that keeps the status). Both name the runner that
-- was lost and the instance that rescued it; NULL in every other row.
ALTER TABLE {{schema}}.task_history
  ADD COLUMN lost_runner text,
  ADD COLUMN rescued_by  text;

CREATE INDEX task_history_rescues_idx ON {{schema}}.task_history (at) WHERE rescued_by IS NOT NULL;

ALTER TABLE {{schema}}.reaper_activity DROP CONSTRAINT reaper_activity_phase_check;
ALTER TABLE {{schema}}.reaper_activity
  ADD CONSTRAINT reaper_activity_phase_check CHECK (phase IN ('tombstone', 'purge', 'history', 'rescue'));

-- One row per rescue, for questions like "which tool loses most runs?" (see the README's cookbook).
CREATE VIEW {{schema}}.task_rescues AS
SELECT task_id,
       tool_name,
       owner,
       at,
       lost_runner,
       rescued_by,
       CASE WHEN to_status = 'working' THEN 'resumed' ELSE 'failed' END AS outcome,
       message
  FROM {{schema}}.task_history
 WHERE rescued_by IS NOT NULL;
