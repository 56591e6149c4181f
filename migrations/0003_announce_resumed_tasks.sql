-- 0003: a watched task that leaves input_required (its last answer arrived) is announced too, so a
-- subscriber on another instance hears it working again instead of seeing input_required until
-- the task settles. 0001 left out every move to working, but the only one there is (tasks are
-- inserted working, and a settled task never moves) is this one: any status change of an awaited
-- task is announced now.
DROP TRIGGER tasks_announce_change ON {{schema}}.tasks;

CREATE TRIGGER tasks_announce_change
  AFTER UPDATE ON {{schema}}.tasks
  FOR EACH ROW
  WHEN (
    (NEW.awaited AND OLD.status IS DISTINCT FROM NEW.status)
    OR OLD.cancel_requested_at IS DISTINCT FROM NEW.cancel_requested_at
    OR OLD.expires_at IS DISTINCT FROM NEW.expires_at
  )
  EXECUTE FUNCTION {{schema}}.announce_task_change();
