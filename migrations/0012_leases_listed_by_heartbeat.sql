-- 0012: a task that ends before its runner's next heartbeat writes no lease row.
--
-- Since 0007 every task created with a lease inserted its task_leases row in the creating
-- statement and deleted it with its outcome. The leased lifecycle ran at 0.89-0.91 x the unleased
-- one, against the 0.95 x leases may cost (bench/findings.md), and most tool tasks end before the
-- first heartbeat would renew that row. Now a task created with a lease names its runner on its
-- own row (tasks.runner_id, with leased still false) and nothing else. The runner's next heartbeat
-- lists the tasks it still runs: in the statement that renews its other leases, it writes their
-- lease rows and sets leased.
--
-- Until a task is listed, its lease is its runner's: lease_runners holds one row per store
-- instance that creates leased tasks, renewed by every heartbeat. The runner is presumed dead
-- once beat_at + lease_ms has passed, the deadline its listed leases share. The rescuer then takes
-- its unlisted tasks (runner_id = the runner, leased false, working) through tasks_created_idx:
-- every such task was created at or after listed_from. The heartbeat sets listed_from to the
-- database clock of the last heartbeat the runner had heard back from before it sent each create
-- still in flight, or of its last heartbeat if none is.
--
-- The rescuer deletes a dead runner's row once no open task is left unlisted by it. A runner that
-- was presumed dead but still runs (cut off from the database for longer than its lease) finds
-- its leases lost and writes its row again with its next heartbeat.
CREATE TABLE {{schema}}.lease_runners (
  runner_id   text PRIMARY KEY CHECK (runner_id <> ''),
  lease_ms    bigint      NOT NULL CHECK (lease_ms > 0),
  started_at  timestamptz NOT NULL,
  beat_at     timestamptz NOT NULL,
  listed_from timestamptz NOT NULL
) WITH (fillfactor = 50);

-- Every lease in force, listed or not: what the command line and the dashboard show, and what
-- plain SQL should read instead of task_leases. A task not yet listed was acquired when it was
-- created, and its lease ends with its runner's. Only open tasks count: a task that settles while
-- a heartbeat lists it can keep its lease row until the reaper takes the task, since the settling
-- statement's snapshot predates the row.
CREATE VIEW {{schema}}.execution_leases AS
SELECT l.task_id, l.runner_id, l.expires_at, l.acquired_at, l.attempts, l.lost_runner, l.lost_status
  FROM {{schema}}.task_leases AS l
  JOIN {{schema}}.tasks AS t USING (task_id)
 WHERE t.status IN ('working', 'input_required')
UNION ALL
SELECT t.task_id, t.runner_id, r.beat_at + r.lease_ms * interval '1 millisecond', t.created_at, 0, NULL, NULL
  FROM {{schema}}.lease_runners AS r
  JOIN {{schema}}.tasks AS t ON t.runner_id = r.runner_id AND t.created_at >= r.listed_from
 WHERE NOT t.leased AND t.status IN ('working', 'input_required');
