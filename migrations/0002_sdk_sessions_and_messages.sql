-- 0002: what the MCP TypeScript SDK 1.x integration (the package's `sdk` export) keeps beside the
-- tasks: the session that created an unowned task, and the messages queued for delivery through
-- tasks/result.
--
-- Both hang off tasks with ON DELETE CASCADE, so whatever removes a task row (discardTask, the
-- reaper turning an expired task into a tombstone) removes them in the same statement.

-- The session of a task created by a caller without a principal: tasks/list for such a caller
-- lists its own session's tasks and nothing else. Authenticated callers list by owner instead, so
-- their tasks have no row here.
CREATE TABLE {{schema}}.task_sessions (
  task_id    {{schema}}.task_id PRIMARY KEY REFERENCES {{schema}}.tasks ON DELETE CASCADE,
  session_id text        NOT NULL,
  created_at timestamptz NOT NULL -- the task's own created_at, so a session pages in creation order
);

CREATE INDEX task_sessions_session_idx ON {{schema}}.task_sessions (session_id, created_at, task_id);

-- The SDK's TaskMessageQueue: one FIFO per task and session (a request for input queued for one
-- session must never be consumed by another). session_id is NULL for sessionless transports.
CREATE TABLE {{schema}}.task_messages (
  task_id    {{schema}}.task_id     NOT NULL REFERENCES {{schema}}.tasks ON DELETE CASCADE,
  session_id text,
  position   bigint                 GENERATED ALWAYS AS IDENTITY PRIMARY KEY, -- the FIFO order
  message    {{schema}}.json_object NOT NULL,                                 -- the SDK's QueuedMessage
  queued_at  timestamptz            NOT NULL DEFAULT now()
);

-- Every read takes the head of one task's queue for one session; the cascade finds a task's rows.
CREATE INDEX task_messages_queue_idx ON {{schema}}.task_messages (task_id, session_id, position);
