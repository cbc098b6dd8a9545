-- The suite's own tables, next to pgqueue's in the same database. Handlers write a delivery row
-- (committed before the handler goes on); whoever injects a session fault first writes the
-- claims that session holds into chaos.fault. A claim is (message id, attempt): the re-check
-- counts every claim, so no two claims of one message share an attempt.
CREATE SCHEMA IF NOT EXISTS chaos;

CREATE TABLE IF NOT EXISTS chaos.delivery (
    key              bigint      NOT NULL,
    message_id       bigint      NOT NULL,
    queue            text        NOT NULL,
    attempt          integer     NOT NULL,
    consumer         text        NOT NULL,
    jvm_pid          bigint      NOT NULL,
    -- the poller thread that ran the handler
    thread           text        NOT NULL,
    -- the fault the handler injected after recording, if any
    fault            text,
    -- whether the listener registry was running when the handler started
    listener_running boolean     NOT NULL,
    payload_type     text,
    -- canaries the consumer JVM had built when the handler started
    canaries         integer     NOT NULL,
    recorded_at      timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- When the handler ended its work, for consumers started with --chaos.record-ends=true.
ALTER TABLE chaos.delivery ADD COLUMN IF NOT EXISTS ended_at timestamptz;

CREATE TABLE IF NOT EXISTS chaos.fault (
    message_id  bigint      NOT NULL,
    attempt     integer     NOT NULL,
    reason      text        NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE TABLE IF NOT EXISTS chaos.consumer (
    name       text        NOT NULL,
    jvm_pid    bigint      NOT NULL,
    started_at timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- The key of a message row: the chaos-key header (set on rows inserted by hand), else the
-- payload's numeric "key".
CREATE OR REPLACE FUNCTION chaos.key_of(payload jsonb, headers jsonb) RETURNS bigint
    LANGUAGE sql IMMUTABLE AS
$$
    SELECT CASE
               WHEN headers ? 'chaos-key' THEN (headers ->> 'chaos-key')::bigint
               WHEN jsonb_typeof(payload) = 'object' AND jsonb_typeof(payload -> 'key') = 'number'
                   AND (payload ->> 'key') ~ '^-?[0-9]{1,18}$' THEN (payload ->> 'key')::bigint
           END
$$;

-- The claims the backends hold right now: every message whose lock key one of them holds in
-- pgqueue's namespace, with the attempt of its current claim (the attempts stored, which count
-- the ones that ended, plus one).
CREATE OR REPLACE FUNCTION chaos.held_by(pids integer[]) RETURNS TABLE (message_id bigint, attempt integer)
    LANGUAGE sql AS
$$
    SELECT m.id, m.attempts + 1
      FROM pg_locks l
      JOIN pgqueue.message m ON l.objid = (m.id::bit(32)::int4)::oid
     WHERE l.locktype = 'advisory' AND l.objsubid = 2 AND l.granted
       AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
       AND l.classid = 'pgqueue.message'::regclass::oid
       AND l.pid = ANY (pids)
$$;

-- The backend holding the lock of one message (an empty array if none).
CREATE OR REPLACE FUNCTION chaos.holder_of(message bigint) RETURNS integer[]
    LANGUAGE sql AS
$$
    SELECT COALESCE(array_agg(l.pid), '{}')
      FROM pg_locks l
     WHERE l.locktype = 'advisory' AND l.objsubid = 2 AND l.granted
       AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
       AND l.classid = 'pgqueue.message'::regclass::oid
       AND l.objid = (message::bit(32)::int4)::oid
$$;

-- The backends of one application name, this one excepted.
CREATE OR REPLACE FUNCTION chaos.backends_of(app text) RETURNS integer[]
    LANGUAGE sql AS
$$
    SELECT COALESCE(array_agg(pid), '{}') FROM pg_stat_activity
     WHERE application_name = app AND pid <> pg_backend_pid()
$$;

-- Records the claims of the backends as faulted, then terminates them if asked, waiting until
-- each is gone. Callers make sure the backends are idle (their JVM is stopped, or their thread
-- is the caller), so the claims cannot change between the two steps.
CREATE OR REPLACE FUNCTION chaos.fault_backends(pids integer[], reason text, terminate boolean) RETURNS integer
    LANGUAGE plpgsql AS
$$
DECLARE
    terminated integer := 0;
BEGIN
    INSERT INTO chaos.fault (message_id, attempt, reason)
    SELECT h.message_id, h.attempt, reason FROM chaos.held_by(pids) h;
    IF terminate THEN
        SELECT count(*) INTO terminated FROM unnest(pids) AS p(pid) WHERE pg_terminate_backend(p.pid, 10000);
    END IF;
    RETURN terminated;
END
$$;

-- What a transactional handler writes in its own transaction, one row per handled job: its
-- effects. A job whose effect row appears twice took effect twice.
CREATE TABLE IF NOT EXISTS chaos.effect (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    key         bigint      NOT NULL,
    message_id  bigint      NOT NULL,
    attempt     integer     NOT NULL,
    consumer    text        NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- What a consumer started with --chaos.heap-sample-interval writes at that interval: its heap in
-- use right after a full collection (System.gc()).
CREATE TABLE IF NOT EXISTS chaos.heap (
    consumer        text        NOT NULL,
    jvm_pid         bigint      NOT NULL,
    used_bytes      bigint      NOT NULL,
    committed_bytes bigint      NOT NULL,
    sampled_at      timestamptz NOT NULL DEFAULT clock_timestamp()
);
