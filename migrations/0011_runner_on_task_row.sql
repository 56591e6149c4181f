-- 0011: a leased task's runner is kept on its task row, so the transitions guard against a lost
-- runner without touching task_leases.
--
-- Since 0007 every transition of a leased task locked its lease row (FOR UPDATE) to learn whether
-- the caller still held the lease, and the insert of every lease fired 0008's flag trigger: with
-- the lease's insert and delete, the leased lifecycle ran at 0.86 x the unleased one, against the
-- 0.95 x the leases were allowed to cost (bench/findings.md). With the runner on the task row, a
-- transition checks a column of the row it locks anyway, and PostgreSQL re-checks that column
-- after waiting for the row's lock: a rescue, which rewrites the column under that lock, is seen
-- by every transition that waited for it.
--
-- task_leases keeps the lease itself (its deadline, renewed by heartbeats, and the rescues so
-- far) and its runner_id, which the command line and older instances read.
--
-- runner_id on tasks, while the task is open:
--   NULL  no lease: any instance may write the task;
--   ''    rescued, waiting for an instance with the tool's resume hook to claim it: only a
--         client's call (an answer, a cancel) is taken;
--   other the runner holding the lease: only it, and clients, may write the task.
-- A task that settles has NULL.
ALTER TABLE {{schema}}.tasks ADD COLUMN runner_id text;

UPDATE {{schema}}.tasks AS t SET runner_id = coalesce(l.runner_id, '')
  FROM {{schema}}.task_leases AS l WHERE l.task_id = t.task_id;

-- This version writes the task row's runner_id in the statement that writes the lease, and marks
-- the lease task_synced. The triggers below keep the two in step for every other writer (an older
-- instance during a rolling upgrade, plain SQL): they fire only for lease rows not marked, and for
-- any change of a lease's runner (a claim or a rescue, never a heartbeat). A changed runner
-- unmarks the row, so the delete that ends it also clears the task row.
--
-- This version locks a task row before its lease row; older versions took the other order. During
-- a rolling upgrade a transition of a leased task on an old instance racing one on a new instance
-- can therefore deadlock, and PostgreSQL fails one of the two (a backend error; neither is half
-- applied).
ALTER TABLE {{schema}}.task_leases ADD COLUMN task_synced boolean NOT NULL DEFAULT false;

DROP TRIGGER task_leases_flag_task ON {{schema}}.task_leases;
DROP FUNCTION {{schema}}.flag_leased_task();

CREATE FUNCTION {{schema}}.sync_task_runner() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    UPDATE {{schema}}.tasks SET runner_id = NULL WHERE task_id = OLD.task_id AND runner_id IS NOT NULL;
  ELSE
    UPDATE {{schema}}.tasks SET leased = true, runner_id = coalesce(NEW.runner_id, '')
     WHERE task_id = NEW.task_id AND (NOT leased OR runner_id IS DISTINCT FROM coalesce(NEW.runner_id, ''));
  END IF;
  RETURN NULL;
END
$$;

CREATE TRIGGER task_leases_sync_inserted
  AFTER INSERT ON {{schema}}.task_leases
  FOR EACH ROW WHEN (NOT NEW.task_synced) EXECUTE FUNCTION {{schema}}.sync_task_runner();

CREATE TRIGGER task_leases_sync_runner
  AFTER UPDATE OF runner_id ON {{schema}}.task_leases
  FOR EACH ROW WHEN (OLD.runner_id IS DISTINCT FROM NEW.runner_id) EXECUTE FUNCTION {{schema}}.sync_task_runner();

CREATE TRIGGER task_leases_sync_deleted
  AFTER DELETE ON {{schema}}.task_leases
  FOR EACH ROW WHEN (NOT OLD.task_synced) EXECUTE FUNCTION {{schema}}.sync_task_runner();

-- A BEFORE trigger may change only its own row: it unmarks the lease whose runner changed.
CREATE FUNCTION {{schema}}.unmark_rerun_lease() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  NEW.task_synced := false;
  RETURN NEW;
END
$$;

CREATE TRIGGER task_leases_unmark_rerun
  BEFORE UPDATE OF runner_id ON {{schema}}.task_leases
  FOR EACH ROW WHEN (OLD.runner_id IS DISTINCT FROM NEW.runner_id) EXECUTE FUNCTION {{schema}}.unmark_rerun_lease();
