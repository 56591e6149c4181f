-- 0005: a task deleted because it expired is no longer announced.
--
-- Every instance holding a token or a waiter for a task arms its own timer from the task's
-- deadline, read from the database clock, and re-reads the row when it fires; so the 'deleted'
-- NOTIFY of a row the reaper moves to the tombstones only repeated what that timer had already
-- done. It cost a plpgsql call and a pg_notify per reaped row, about a third of the reaper's
-- statement. A row deleted before its deadline (discardTask, or plain SQL) is announced as before.
--
-- now() is the deleting transaction's start, the same clock the reaper selects expired rows by.
DROP TRIGGER tasks_announce_deletion ON {{schema}}.tasks;

CREATE TRIGGER tasks_announce_deletion
  AFTER DELETE ON {{schema}}.tasks
  FOR EACH ROW
  WHEN (OLD.expires_at IS NULL OR OLD.expires_at > now())
  EXECUTE FUNCTION {{schema}}.announce_task_change();
