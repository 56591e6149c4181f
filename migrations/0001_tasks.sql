-- 0001: the task store.
--
-- {{schema}} is replaced by the quoted schema name and {{channel}} by the quoted NOTIFY channel
-- (see src/postgres/schema-name.ts); nothing else is templated.
--
-- tasks holds live tasks only and is the table every transition touches, so it stays narrow in
-- purpose: history, input requests and tombstones live in their own tables.

CREATE SCHEMA IF NOT EXISTS {{schema}};

-- Rules about one value are domains. PostgreSQL checks a domain when a value is written to a
-- column of that type, while it re-reads and re-evaluates every table CHECK on every UPDATE of a
-- row, whatever columns the UPDATE touches: on the table each transition updates, that matters.
CREATE DOMAIN {{schema}}.task_id AS text CHECK (VALUE ~ '^[0-9a-f]{32}$');
CREATE DOMAIN {{schema}}.task_status AS text
  CHECK (VALUE IN ('working', 'input_required', 'completed', 'failed', 'cancelled'));
CREATE DOMAIN {{schema}}.tool_name AS text CHECK (VALUE <> '');
CREATE DOMAIN {{schema}}.json_object AS jsonb CHECK (jsonb_typeof(VALUE) = 'object');
CREATE DOMAIN {{schema}}.milliseconds AS bigint CHECK (VALUE >= 0);

CREATE TABLE {{schema}}.tasks (
  task_id             {{schema}}.task_id     PRIMARY KEY,
  owner               text,                       -- NULL: created without a principal; '' is a real owner
  tool_name           {{schema}}.tool_name   NOT NULL,
  arguments           jsonb                  NOT NULL,
  status              {{schema}}.task_status NOT NULL,
  previous_status     {{schema}}.task_status, -- before the last transition: its history row's from_status
  status_message      text,
  created_at          timestamptz            NOT NULL,
  last_updated_at     timestamptz            NOT NULL,
  ttl_ms              {{schema}}.milliseconds,  -- NULL: never expires
  expires_at          timestamptz,              -- created_at + ttl_ms, kept for the indexes
  poll_interval_ms    {{schema}}.milliseconds,
  meta                {{schema}}.json_object,
  result              {{schema}}.json_object,
  error               {{schema}}.json_object,
  cancel_requested_at timestamptz,              -- the last cancelTask, which raises the token
  awaited             boolean                NOT NULL DEFAULT false, -- a waiter wants a NOTIFY when this task settles

  -- The rules across columns, as one constraint: each table CHECK costs every UPDATE.
  CONSTRAINT tasks_consistent CHECK (
        (ttl_ms IS NULL) = (expires_at IS NULL)         -- a ttl has a deadline
    AND (status = 'completed') = (result IS NOT NULL)   -- a completed task carries its result,
    AND (status = 'failed') = (error IS NOT NULL)       -- a failed one its error, and no other does
  )
);

-- Room on each page for HOT updates: most transitions change no indexed column.
ALTER TABLE {{schema}}.tasks SET (fillfactor = 85, autovacuum_vacuum_scale_factor = 0.05);

-- listTasks pages in (created_at, task_id) order, optionally for one owner.
CREATE INDEX tasks_created_idx ON {{schema}}.tasks (created_at, task_id);
CREATE INDEX tasks_owner_created_idx ON {{schema}}.tasks (owner, created_at, task_id);
-- The reaper finds expired rows.
CREATE INDEX tasks_expires_idx ON {{schema}}.tasks (expires_at) WHERE expires_at IS NOT NULL;

-- One row per request key a task ever issued. The key is the primary key, so a key can never name
-- a second request. 'answered' and 'superseded' keys are spent; 'outstanding' ones are what the
-- task waits on while it is input_required (once it is terminal they are moot).
CREATE TABLE {{schema}}.input_requests (
  task_id     {{schema}}.task_id     NOT NULL REFERENCES {{schema}}.tasks ON DELETE CASCADE,
  request_key text                   NOT NULL CHECK (request_key <> ''),
  request     {{schema}}.json_object NOT NULL,
  state       text                   NOT NULL CHECK (state IN ('outstanding', 'answered', 'superseded')),
  response    {{schema}}.json_object,
  issued_at   timestamptz NOT NULL,
  settled_at  timestamptz,

  PRIMARY KEY (task_id, request_key),
  CHECK ((state = 'answered') = (response IS NOT NULL)),
  CHECK ((state = 'outstanding') = (settled_at IS NULL))
);

-- What is left of an expired task until the retention window closes: enough for taskPresence to
-- answer "expired" to its owner, and nothing of its content.
CREATE TABLE {{schema}}.tombstones (
  task_id       text        PRIMARY KEY,
  owner         text,
  expired_at    timestamptz NOT NULL,
  tombstoned_at timestamptz NOT NULL DEFAULT now()
);

-- The reaper purges tombstones once their retention window after expiry has passed.
CREATE INDEX tombstones_expired_idx ON {{schema}}.tombstones (expired_at);

-- Append-only: one row per transition (the creation, then every change of status), written by the
-- statement that makes it, so it commits with it. Progress messages that keep the status live on
-- the task row only. Kept until the task is discarded or its tombstone purged; no foreign key, so
-- a tombstoned task keeps its history until then.
CREATE TABLE {{schema}}.task_history (
  task_id     text        NOT NULL,
  id          bigint      GENERATED ALWAYS AS IDENTITY, -- the order of transitions
  at          timestamptz NOT NULL,
  from_status text,                 -- NULL for the creation
  to_status   text        NOT NULL,
  message     text,

  -- History is read a task at a time, in order: one index serves that and keeps rows unique.
  PRIMARY KEY (task_id, id)
);

-- NOTIFY is a hint that a task changed in a way another instance may care about; receivers re-read
-- the row. The payload is "<event>:<task_id>". NOTIFY takes a database-wide lock at commit, so a
-- settled status is announced only when a waiter asked for it (awaited).
CREATE FUNCTION {{schema}}.announce_task_change() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  event text;
BEGIN
  IF TG_OP = 'DELETE' THEN
    event := 'deleted';
  ELSIF NEW.cancel_requested_at IS DISTINCT FROM OLD.cancel_requested_at THEN
    event := 'cancelled';
  ELSIF NEW.expires_at IS DISTINCT FROM OLD.expires_at THEN
    event := 'ttl';
  ELSE
    event := 'status';
  END IF;
  PERFORM pg_notify({{channel}}, event || ':' || CASE WHEN TG_OP = 'DELETE' THEN OLD.task_id ELSE NEW.task_id END);
  RETURN NULL;
END
$$;

CREATE TRIGGER tasks_announce_change
  AFTER UPDATE ON {{schema}}.tasks
  FOR EACH ROW
  WHEN (
    (NEW.awaited AND OLD.status IS DISTINCT FROM NEW.status AND NEW.status <> 'working')
    OR OLD.cancel_requested_at IS DISTINCT FROM NEW.cancel_requested_at
    OR OLD.expires_at IS DISTINCT FROM NEW.expires_at
  )
  EXECUTE FUNCTION {{schema}}.announce_task_change();

CREATE TRIGGER tasks_announce_deletion
  AFTER DELETE ON {{schema}}.tasks
  FOR EACH ROW EXECUTE FUNCTION {{schema}}.announce_task_change();
