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
INSERT INTO pgqueue.queue AS q (name, max_attempts, backoff_initial_ms, backoff_multiplier,
                                backoff_max_ms, dead_letter_queue)
VALUES (:name, :max_attempts, :backoff_initial_ms, :backoff_multiplier, :backoff_max_ms, :dead_letter_queue)
ON CONFLICT (name) DO UPDATE
   SET max_attempts = excluded.max_attempts,
       backoff_initial_ms = excluded.backoff_initial_ms,
       backoff_multiplier = excluded.backoff_multiplier,
       backoff_max_ms = excluded.backoff_max_ms,
       dead_letter_queue = excluded.dead_letter_queue,
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
