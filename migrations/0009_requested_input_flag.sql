-- 0009: the reaper looks for the input requests of only the tasks that ever issued one.
--
-- Deleting a batch's input requests was the larger part of the reaper's statement (an index scan
-- with every reaped task id as a key, bench/findings.md), though most tasks never ask for input.
-- requested_input is true once an input request was inserted for the task, and never cleared. A
-- trigger sets it, so every writer (this version, an older instance, plain SQL) flags the task;
-- the input request's statement runs with the task row locked already, so the trigger takes no
-- lock the transaction does not hold.
--
-- Rows that exist before this migration read true (the column's default while it is added, which
-- costs no table rewrite): for them the reaper looks, as it did before. New rows start false.
ALTER TABLE {{schema}}.tasks ADD COLUMN requested_input boolean NOT NULL DEFAULT true;
ALTER TABLE {{schema}}.tasks ALTER COLUMN requested_input SET DEFAULT false;

CREATE FUNCTION {{schema}}.flag_task_requesting_input() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  UPDATE {{schema}}.tasks SET requested_input = true WHERE task_id = NEW.task_id AND NOT requested_input;
  RETURN NULL;
END
$$;

CREATE TRIGGER input_requests_flag_task
  AFTER INSERT ON {{schema}}.input_requests
  FOR EACH ROW EXECUTE FUNCTION {{schema}}.flag_task_requesting_input();
