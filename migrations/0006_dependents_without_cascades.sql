-- 0006: the rows that hang off a task are deleted by the statements that delete the task, and no
-- longer by foreign-key cascades.
--
-- A cascade runs once per deleted task row, for each of the three tables: when the reaper moves a
-- batch of 1,000 expired tasks to the tombstones, that was 3,000 lookups run one at a time, about
-- half of its statement. The store now deletes a task's input requests, session and queued
-- messages in the statement that deletes the task (the reaper's batch, discardTask), as sets.
--
-- What the foreign keys also guarded, the writers guard now: input requests are written by
-- transitions holding the task's row lock, and the SDK integration inserts a session or a message
-- only while it holds a share lock on a live task row. The reaper's history phase, which visits
-- every task once it is gone for good, deletes whatever is left of it in these tables too: rows
-- left by a task deleted in plain SQL, or by an instance of an older version during a rolling
-- upgrade.
ALTER TABLE {{schema}}.input_requests DROP CONSTRAINT input_requests_task_id_fkey;
ALTER TABLE {{schema}}.task_sessions  DROP CONSTRAINT task_sessions_task_id_fkey;
ALTER TABLE {{schema}}.task_messages  DROP CONSTRAINT task_messages_task_id_fkey;
