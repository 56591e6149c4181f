-- 0010: heartbeats become HOT updates, and a lease costs one index entry instead of three.
--
-- A heartbeat rewrites expires_at of every lease its instance holds, once per interval. With
-- expires_at indexed, no renewal could be a HOT update: each one wrote a new entry in all three
-- of the table's indexes. And every leased task paid three index inserts for a row that lives only
-- while the task runs. What each index served:
--
-- - task_leases_runner_idx (runner_id): nothing on the hot path. A heartbeat names its leases by
--   task_id, which the primary key finds; the command line's count per runner reads the whole
--   table anyway.
-- - task_leases_expires_idx (expires_at): the rescuer's search for expired leases, once per rescue
--   interval on one instance. The table holds only the leases of running tasks (a settled task's
--   lease is deleted with its transition), so a sequential scan of it is cheap; the index was paid
--   by every renewal instead.
-- - claims of rescued tasks waiting for a resume (runner_id IS NULL), which every instance with a
--   resume hook looks for on each heartbeat: a partial index on task_id finds them. Its columns
--   are never changed by a renewal, so renewals stay HOT, and a lease held by a runner has no
--   entry in it.
--
-- fillfactor 50 leaves room on each page for the renewed versions of its rows.
DROP INDEX {{schema}}.task_leases_runner_idx;
DROP INDEX {{schema}}.task_leases_expires_idx;

CREATE INDEX task_leases_awaiting_resume_idx ON {{schema}}.task_leases (task_id) WHERE runner_id IS NULL;

ALTER TABLE {{schema}}.task_leases SET (fillfactor = 50);
