-- The statements of the template's and the admin's operations on queues and exchanges.

-- name: cancel
-- Deletes the message only if no consumer holds it, under a transaction-scoped lock of its key
-- (cancel_message, V16): the DELETE may wait on a row a concurrent change holds and then find it
-- moved, and the lock keeps consumers off the row until the caller's transaction ends. A message
-- of a FIFO group is deleted under its group's lock, and the group's head test mended. Whether it
-- was deleted.
SELECT pgqueue.cancel_message(:id, :queue, :namespace) AS deleted;

-- name: exists
SELECT EXISTS (SELECT 1 FROM pgqueue.message WHERE id = :id AND (queue = :queue) IS TRUE);

-- name: stats
-- The queue's counts. In flight = held right now by an advisory lock of this namespace: found from
-- pg_locks (a handful of rows) through the primary key, every id whose fold is a held key, so the
-- cost does not grow with the queue. The dead-letter queue is the configured one, else <queue>.dlq.
WITH held AS (
    SELECT m.id FROM pgqueue.message m
     WHERE m.queue = :queue AND m.id IN (
           SELECT l.objid::bigint + s.n * 4294967296
             FROM pg_locks l
            CROSS JOIN generate_series(0, COALESCE((SELECT max(id) FROM pgqueue.message), 0) >> 32) AS s(n)
            WHERE l.locktype = 'advisory' AND l.objsubid = 2 AND l.granted
              AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
              AND l.classid = :namespace::int4::oid))
SELECT (SELECT count(*) FROM pgqueue.message WHERE queue = :queue AND visible_at <= now())
           - (SELECT count(*) FROM held) AS ready,
       (SELECT count(*) FROM pgqueue.message WHERE queue = :queue AND visible_at > now()) AS delayed,
       (SELECT count(*) FROM held) AS in_flight,
       (SELECT count(*) FROM pgqueue.message
         WHERE queue = COALESCE((SELECT q.dead_letter_queue FROM pgqueue.queue q WHERE q.name = :queue),
                                pgqueue.default_dead_letter_queue(:queue))) AS dead_lettered,
       (SELECT extract(epoch FROM now() - min(m.created_at)) FROM pgqueue.message m
         WHERE m.queue = :queue AND m.visible_at <= now() AND m.id NOT IN (SELECT id FROM held)) AS oldest_age_s;

-- name: upsert_queue
-- A queue without a deduplication window keeps no keys: those kept under a window removed now go.
WITH forgotten AS (
    DELETE FROM pgqueue.deduplication_key WHERE queue = :name AND :deduplication_window_ms::bigint IS NULL
)
INSERT INTO pgqueue.queue AS q (name, max_attempts, backoff_initial_ms, backoff_multiplier,
                                backoff_max_ms, dead_letter_queue, deduplication_window_ms, retention_ms,
                                rate_limit_permits, rate_limit_period_ms, concurrency_key, max_in_flight_per_key,
                                rate_limit_per_key_permits, rate_limit_per_key_period_ms)
VALUES (:name, :max_attempts, :backoff_initial_ms, :backoff_multiplier, :backoff_max_ms, :dead_letter_queue,
        :deduplication_window_ms, :retention_ms, :rate_limit_permits, :rate_limit_period_ms, :concurrency_key,
        :max_in_flight_per_key, :rate_limit_per_key_permits, :rate_limit_per_key_period_ms)
ON CONFLICT (name) DO UPDATE
   SET max_attempts = excluded.max_attempts,
       backoff_initial_ms = excluded.backoff_initial_ms,
       backoff_multiplier = excluded.backoff_multiplier,
       backoff_max_ms = excluded.backoff_max_ms,
       dead_letter_queue = excluded.dead_letter_queue,
       deduplication_window_ms = excluded.deduplication_window_ms,
       retention_ms = excluded.retention_ms,
       rate_limit_permits = excluded.rate_limit_permits,
       rate_limit_period_ms = excluded.rate_limit_period_ms,
       concurrency_key = excluded.concurrency_key,
       max_in_flight_per_key = excluded.max_in_flight_per_key,
       rate_limit_per_key_permits = excluded.rate_limit_per_key_permits,
       rate_limit_per_key_period_ms = excluded.rate_limit_per_key_period_ms,
       updated_at = now();

-- name: redrive
-- Moves back up to :max dead letters that came from :queue (others sharing the dead-letter queue
-- stay), parked ones included, as ordinary messages outside any FIFO group, keeping their ids
-- (redrive_dead_letters, V16). Each is locked as a consumer would lock it, for the transaction
-- only: a message a consumer holds is skipped, and none can be claimed between check and move.
SELECT pgqueue.redrive_dead_letters(:queue, :dead_letter_queue, :window, :namespace, :max, :channel) AS moved;

-- name: declare_exchange
-- Upserts the exchange and its bindings and deletes the bindings no longer declared, in one
-- statement (the foreign key is checked at its end, after the exchange row exists).
WITH exchange AS (
    INSERT INTO pgqueue.exchange AS e (name, type, unroutable) VALUES (:exchange, :type, :unroutable)
    ON CONFLICT (name) DO UPDATE
       SET type = excluded.type, unroutable = excluded.unroutable, updated_at = now()
    RETURNING e.name
),
bound AS (
    INSERT INTO pgqueue.binding AS b (exchange, queue, routing_key, key_regex)
    SELECT :exchange, n.queue, n.routing_key, n.key_regex
      FROM unnest(:queues::text[], :routing_keys::text[], :key_regexes::text[]) AS n(queue, routing_key, key_regex)
    ON CONFLICT (exchange, queue, routing_key) DO UPDATE SET key_regex = excluded.key_regex
    RETURNING b.queue
)
DELETE FROM pgqueue.binding o
 WHERE o.exchange = :exchange
   AND (o.queue, o.routing_key) NOT IN (SELECT * FROM unnest(:queues::text[], :routing_keys::text[]));

-- name: ensure_exchange
-- Declares an exchange as a topic exchange that drops what matches no binding unless it exists,
-- leaving an existing one (and its bindings) as it is; the type in force either way. The second
-- branch reads the snapshot from before the insert, so exactly one branch returns a row.
WITH created AS (
    INSERT INTO pgqueue.exchange (name, type, unroutable) VALUES (:exchange, 'topic', 'drop')
    ON CONFLICT (name) DO NOTHING
    RETURNING type
)
SELECT type FROM created
UNION ALL
SELECT e.type FROM pgqueue.exchange e WHERE e.name = :exchange AND NOT EXISTS (SELECT 1 FROM created);

-- name: bind_queue
-- Adds one binding to an exchange and leaves its other bindings alone (declare_exchange replaces
-- them all).
INSERT INTO pgqueue.binding AS b (exchange, queue, routing_key, key_regex)
VALUES (:exchange, :queue, :routing_key, :key_regex)
ON CONFLICT (exchange, queue, routing_key) DO UPDATE SET key_regex = excluded.key_regex;

-- name: unbind_queue
-- Removes one binding of an exchange.
DELETE FROM pgqueue.binding WHERE exchange = :exchange AND queue = :queue AND routing_key = :routing_key;

-- name: dead_letter_queue
-- The configured dead-letter queue of a queue; null or no row when it has the default.
SELECT dead_letter_queue FROM pgqueue.queue WHERE name = :queue;

-- name: dead_letter_queue_of_declared
-- The effective dead-letter queue of a declared queue; no row if it is not declared.
SELECT COALESCE(dead_letter_queue, pgqueue.default_dead_letter_queue(name)) AS dead_letter_queue
  FROM pgqueue.queue WHERE name = :queue;

-- name: declared_queues
-- Every declared queue and its dead-letter queue.
SELECT name FROM pgqueue.queue
UNION
SELECT COALESCE(dead_letter_queue, pgqueue.default_dead_letter_queue(name)) FROM pgqueue.queue;

-- name: create_queue
-- Inserts a queue's definition unless the queue exists: no row is changed then.
INSERT INTO pgqueue.queue (name, max_attempts, backoff_initial_ms, backoff_multiplier, backoff_max_ms,
                           dead_letter_queue, deduplication_window_ms, retention_ms,
                           rate_limit_permits, rate_limit_period_ms, concurrency_key, max_in_flight_per_key,
                           rate_limit_per_key_permits, rate_limit_per_key_period_ms)
VALUES (:name, :max_attempts, :backoff_initial_ms, :backoff_multiplier, :backoff_max_ms, :dead_letter_queue,
        :deduplication_window_ms, :retention_ms, :rate_limit_permits, :rate_limit_period_ms, :concurrency_key,
        :max_in_flight_per_key, :rate_limit_per_key_permits, :rate_limit_per_key_period_ms)
ON CONFLICT (name) DO NOTHING;

-- name: alter_queue
-- Changes an existing queue's definition; no row is changed if it does not exist. The keys kept
-- under a deduplication window removed now go (see upsert_queue).
WITH forgotten AS (
    DELETE FROM pgqueue.deduplication_key WHERE queue = :name AND :deduplication_window_ms::bigint IS NULL
)
UPDATE pgqueue.queue
   SET max_attempts = :max_attempts, backoff_initial_ms = :backoff_initial_ms,
       backoff_multiplier = :backoff_multiplier, backoff_max_ms = :backoff_max_ms,
       dead_letter_queue = :dead_letter_queue, deduplication_window_ms = :deduplication_window_ms,
       retention_ms = :retention_ms, rate_limit_permits = :rate_limit_permits,
       rate_limit_period_ms = :rate_limit_period_ms, concurrency_key = :concurrency_key,
       max_in_flight_per_key = :max_in_flight_per_key, rate_limit_per_key_permits = :rate_limit_per_key_permits,
       rate_limit_per_key_period_ms = :rate_limit_per_key_period_ms, updated_at = now()
 WHERE name = :name;

-- name: drop_queue
DELETE FROM pgqueue.queue WHERE name = :queue;

-- name: set_paused
-- Pauses or resumes a queue: claims test it once per statement (a paused queue has no priorities).
UPDATE pgqueue.queue SET paused = :paused, updated_at = now() WHERE name = :queue;

-- name: wake
-- Wakes the pollers of a queue in every process, as a retry or a send does.
SELECT pg_notify(:channel, :queue);

-- name: is_paused
SELECT EXISTS (SELECT 1 FROM pgqueue.queue WHERE name = :queue AND paused) AS paused;

-- name: is_declared
SELECT EXISTS (SELECT 1 FROM pgqueue.queue WHERE name = :queue) AS declared;

-- name: queues
-- Every declared queue with its policy, by name.
SELECT name, max_attempts, backoff_initial_ms, backoff_multiplier, backoff_max_ms, dead_letter_queue,
       deduplication_window_ms, retention_ms, paused, rate_limit_permits, rate_limit_period_ms, concurrency_key,
       max_in_flight_per_key, rate_limit_per_key_permits, rate_limit_per_key_period_ms
  FROM pgqueue.queue
 ORDER BY name;

-- name: message_count
SELECT count(*) AS messages FROM pgqueue.message WHERE queue = :queue;

-- name: bound_exchanges
-- The exchanges that route to a queue.
SELECT DISTINCT exchange FROM pgqueue.binding WHERE queue = :queue ORDER BY 1;

-- name: purge_chunk
-- Locks a chunk of :chunk rows of :queue after :after_id in id order, skipping rows a transaction
-- holds, deletes those whose advisory key is free (no session holds them; only the visible ones
-- unless :everything), and mends the FIFO groups it took messages from, under the queue's lock
-- (purge_messages, V16). The last id it looked at, how many it looked at, how many it deleted.
SELECT last_id, looked, deleted FROM pgqueue.purge_messages(:queue, :after_id, :everything, :chunk, :namespace);

-- name: redrive_ids
-- Moves the chosen dead letters back to the queues they came from, attempts reset, outside any
-- FIFO group (redrive_dead_letters_by_id, V16: its id would put it ahead of its group); one a
-- consumer holds is skipped, and the lock taken here goes with the transaction. Wakes the pollers
-- of each queue. The ids moved.
SELECT id FROM pgqueue.redrive_dead_letters_by_id(:ids, :namespace, :channel) AS r(id);

-- name: dead_letter_queue_of
-- The dead-letter queue of a queue, declared or not: the configured one, else <queue>.dlq.
SELECT COALESCE((SELECT dead_letter_queue FROM pgqueue.queue WHERE name = :queue),
                pgqueue.default_dead_letter_queue(:queue)) AS dead_letter_queue;

-- name: role_exists
SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = :role) AS found;

-- name: table_privileges
-- The statements that give :role the table privileges pgqueue's statements need, identifiers
-- quoted; row-level security then narrows them (V10).
SELECT format(t, :schema::text, :role::text) AS statement FROM (VALUES
    ('GRANT USAGE ON SCHEMA %1$I TO %2$I'),
    ('GRANT SELECT, INSERT, UPDATE, DELETE ON %1$I.message TO %2$I'),
    ('GRANT SELECT ON %1$I.queue TO %2$I'),
    ('GRANT SELECT ON %1$I.setting TO %2$I'),
    ('GRANT SELECT ON %1$I.exchange TO %2$I'),
    ('GRANT SELECT ON %1$I.binding TO %2$I'),
    ('GRANT SELECT, INSERT, UPDATE, DELETE ON %1$I.holding TO %2$I'),
    ('GRANT SELECT ON %1$I.deduplication_key TO %2$I'),
    ('GRANT SELECT, INSERT ON %1$I.archive TO %2$I'),
    ('GRANT SELECT, INSERT, UPDATE ON %1$I.rate_bucket TO %2$I'),
    ('GRANT SELECT, INSERT, UPDATE, DELETE ON %1$I.key_rate_bucket TO %2$I')) AS s(t)
UNION ALL
SELECT format('GRANT USAGE ON SEQUENCE %s TO %I',
              pg_get_serial_sequence(format('%I.' || t.name, :schema::text), t.id), :role::text)
  FROM (VALUES ('message', 'id'), ('holding', 'session')) AS t(name, id);

-- name: grant_access
-- Grants :role :send and :consume on :queue, adding to what it has. Keyed by the role's oid (V18):
-- a role of the same name created after one was dropped is another role.
INSERT INTO pgqueue.queue_access AS a (queue, role, role_oid, send, consume)
SELECT :queue, r.rolname, r.oid, :send, :consume FROM pg_catalog.pg_roles r WHERE r.rolname = :role
ON CONFLICT (queue, role_oid) DO UPDATE
   SET role = excluded.role, send = a.send OR excluded.send, consume = a.consume OR excluded.consume;

-- name: lock_access
-- Revokes take turns: two at once could each delete a row of one role, counting on the other's
-- row that the other revoke was emptying, and leave the role unrestricted. Readers do not wait.
LOCK TABLE pgqueue.queue_access IN SHARE ROW EXCLUSIVE MODE;

-- name: revoke_access
UPDATE pgqueue.queue_access SET send = send AND NOT :send, consume = consume AND NOT :consume
 WHERE queue = :queue AND role_oid = (SELECT r.oid FROM pg_catalog.pg_roles r WHERE r.rolname = :role);

-- name: forget_access
-- After a revoke: deletes the rows that grant nothing any more, of roles that were dropped and of
-- roles that still have a row that grants something. A role's last row stays even when it grants
-- nothing: it holds the role to its grants (a role without any row is not restricted, V10).
DELETE FROM pgqueue.queue_access a
 WHERE NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles r WHERE r.oid = a.role_oid)
    OR (NOT a.send AND NOT a.consume
        AND EXISTS (SELECT 1 FROM pgqueue.queue_access o
                     WHERE o.role_oid = a.role_oid AND (o.send OR o.consume)));

-- name: record_removal
-- Records the transaction of a removal (cancel, purge, redrive) before it locks rows, so that if
-- it rolls back the rows it locked are not taken for a dead consumer's (record_removal, V19).
SELECT pgqueue.record_removal(:removal::xid8) AS recorded;

-- name: current_transaction
SELECT pg_current_xact_id()::text AS xid;

-- name: archive_upkeep
-- Creates the archive's partitions ahead and drops the expired ones (V23).
SELECT created, dropped FROM pgqueue.archive_upkeep(now());

-- name: archived
-- Archived messages matching every condition given (a null one matches all), newest completion
-- first; expired rows whose partition is not dropped yet are left out.
SELECT a.id, a.queue, a.outcome, a.payload::text AS payload, a.headers::text AS headers, a.priority, a.attempts,
       a.max_attempts, a.group_key, a.deduplication_key, a.last_error, a.created_at, a.completed_at, a.expires_at
  FROM pgqueue.archive a
 WHERE (:queue::text IS NULL OR a.queue = :queue)
   AND (:id::bigint IS NULL OR a.id = :id)
   AND (:header_name::text IS NULL OR a.headers ->> :header_name = :header_value)
   AND (:completed_from::timestamptz IS NULL OR a.completed_at >= :completed_from)
   AND (:completed_before::timestamptz IS NULL OR a.completed_at < :completed_before)
   AND a.expires_at > now()
 ORDER BY a.completed_at DESC, a.id DESC
 LIMIT :max;

-- name: resend_archived
-- Sends the newest archived copy of message :id of :queue to that queue again, as a new message
-- with the same body, headers (and pgqueue-resent-from), priority, max attempts and FIFO group;
-- no row if there is none.
INSERT INTO pgqueue.message (queue, payload, headers, priority, max_attempts, group_key)
SELECT a.queue, a.payload, a.headers || jsonb_build_object('pgqueue-resent-from', a.id::text), a.priority,
       a.max_attempts, a.group_key
  FROM pgqueue.archive a
 WHERE a.queue = :queue AND a.id = :id AND a.expires_at > now()
 ORDER BY a.completed_at DESC
 LIMIT 1
RETURNING id;
