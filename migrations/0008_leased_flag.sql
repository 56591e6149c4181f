-- 0008: tasks nobody ever leased skip the lease table.
--
-- Since 0007 every transition of a task locked its (usually missing) lease row first and ended
-- the lease in the same statement: two more relations, with their indexes, for every status
-- change, about a tenth of the server's time per task lifecycle measured in bench/findings.md,
-- paid by every task though only tasks run by the MCP integrations hold leases.
--
-- leased is true once a lease row was ever inserted for the task, and never cleared: a
-- transition reads task_leases only when it is true. A trigger sets it, so every writer of a lease
-- (this version, an older instance during a rolling upgrade, plain SQL) flags the task. The
-- trigger updates the task row after the lease row is written, the lease-first order in which
-- every statement that touches both takes their locks.
ALTER TABLE {{schema}}.tasks ADD COLUMN leased boolean NOT NULL DEFAULT false;

UPDATE {{schema}}.tasks SET leased = true WHERE task_id IN (SELECT task_id FROM {{schema}}.task_leases);

CREATE FUNCTION {{schema}}.flag_leased_task() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  UPDATE {{schema}}.tasks SET leased = true WHERE task_id = NEW.task_id AND NOT leased;
  RETURN NULL;
END
$$;

CREATE TRIGGER task_leases_flag_task
  AFTER INSERT ON {{schema}}.task_leases
  FOR EACH ROW EXECUTE FUNCTION {{schema}}.flag_leased_task();
