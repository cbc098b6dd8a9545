-- The statements of rate limits (V22): a consumer of a limited queue takes tokens from the queue's
-- bucket before it claims, in one short autocommit statement of its own (never in the transaction
-- of a transactional claim, which would hold the bucket's row lock while its handlers run), and
-- claims at most what it was granted. A queue without a limit runs none of these.
--
-- The bucket refills at the limit's rate (permits / period) up to its burst: one second's worth of
-- the limit, at least 1 (100/s: 100; 6000/m: 100; 30/m: 1). So over any window of t seconds the
-- consumers of all JVMs together are granted at most rate × t + burst messages.

-- name: take_tokens
-- Takes up to :wanted tokens (a poller's batch size) from :queue's bucket, all or nothing: it grants
-- least(:wanted, burst) if the bucket holds that many once refilled by the time since its last
-- take, and 0 otherwise (so a poller claims whole batches, and the claim's variants are few). One
-- upsert: the first take of a queue creates its bucket, full, and every later one updates the row
-- under its lock, on the row's newest version (ON CONFLICT DO UPDATE does not read the snapshot):
-- concurrent takes of every JVM queue on the lock and never grant together more than the bucket
-- holds. The rate and burst are the queue's limit now, so a changed limit applies at the next take.
-- The time is read once, after the lock is held. No row: the queue has no limit (any more).
--
-- Returns what was granted and in how many milliseconds the bucket will hold a whole grant again
-- (the poller does not ask before then).
INSERT INTO pgqueue.rate_bucket AS b (queue, rate, burst, tokens, refilled_at, granted)
SELECT q.name, l.rate, l.burst, l.burst - least(:wanted, l.burst), clock_timestamp(), least(:wanted, l.burst)
  FROM pgqueue.queue q
 CROSS JOIN LATERAL (SELECT q.rate_limit_permits * 1000.0 / q.rate_limit_period_ms AS rate,
                            greatest(1, floor(q.rate_limit_permits * 1000.0 / q.rate_limit_period_ms))::int AS burst) l
 WHERE q.name = :queue AND q.rate_limit_permits IS NOT NULL
ON CONFLICT (queue) DO UPDATE
   SET (rate, burst, tokens, refilled_at, granted) = (
        SELECT excluded.rate, excluded.burst, a.available - g.granted, a.at, g.granted
          FROM (SELECT clock_timestamp() AS at) c
         CROSS JOIN LATERAL (
                SELECT c.at, least(excluded.burst::double precision,
                                   b.tokens + excluded.rate * greatest(0, extract(epoch FROM c.at - b.refilled_at)))
                       AS available) a
         CROSS JOIN LATERAL (
                SELECT CASE WHEN a.available >= least(:wanted, excluded.burst)
                            THEN least(:wanted, excluded.burst) ELSE 0 END AS granted) g)
RETURNING b.granted,
          ceil(greatest(0, least(:wanted, b.burst) - b.tokens) / b.rate * 1000)::bigint AS next_in_ms;

-- name: give_back_tokens
-- Gives back the tokens of a grant that the claim did not use (it found fewer messages), up to the
-- burst: the refill since the last take is added at the next take, so the bucket never holds more
-- than a refilled one would.
UPDATE pgqueue.rate_bucket SET tokens = least(burst, tokens + :unused) WHERE queue = :queue;

-- name: rate_limited_queues
-- Which of :queues have a rate limit, of the queue (queue_wide) or of each key (per_key, V26), or
-- both: read at a poller's first poll; it takes tokens for those queues only.
SELECT name, rate_limit_permits IS NOT NULL AS queue_wide, rate_limit_per_key_permits IS NOT NULL AS per_key
  FROM pgqueue.queue
 WHERE name = ANY (:queues::text[]) AND (rate_limit_permits IS NOT NULL OR rate_limit_per_key_permits IS NOT NULL);

-- name: rate_limits
-- Every limited queue's limit and its bucket now: the tokens it holds refilled to this moment (not
-- written). A queue whose bucket no take has created yet has a full one. The ready messages beyond
-- floor(tokens) wait for the limit (QueueAdmin.rateLimits).
SELECT q.name, q.rate_limit_permits, q.rate_limit_period_ms,
       greatest(1, floor(q.rate_limit_permits * 1000.0 / q.rate_limit_period_ms))::int AS burst,
       COALESCE(least(b.burst, b.tokens + b.rate * greatest(0, extract(epoch FROM clock_timestamp() - b.refilled_at))),
                greatest(1, floor(q.rate_limit_permits * 1000.0 / q.rate_limit_period_ms))) AS tokens
  FROM pgqueue.queue q
  LEFT JOIN pgqueue.rate_bucket b ON b.queue = q.name
 WHERE q.rate_limit_permits IS NOT NULL
 ORDER BY q.name;

-- name: take_key_tokens
-- For a queue limited per key (V26): takes tokens for up to :wanted keys that have ready messages,
-- from each key's bucket, before a claim_fair, which then takes at most that many messages of each
-- key. The keys are the ones claim_fair serves next: in descending order from the first key before
-- :after_key (the last key the poller's previous claim served; "" for none), then from the last key
-- down again; one descent of the concurrency index per key, and one more to find whether the key
-- has a visible message. That one is a LATERAL with a LIMIT, which the planner cannot turn into a
-- join: as an EXISTS, the generic plan made while the table was empty hashed every visible message
-- of the queue before every claim. Each key is granted an equal share of :wanted (rounded up, at
-- most its burst), or what its bucket holds once refilled if that is less: a share is partly
-- granted, unlike take_tokens' whole batches, since the claim takes each key's messages one by
-- one. One upsert in key order: concurrent takes of every JVM lock the buckets in the same order,
-- and queue on each as take_tokens does. Every twentieth take or so also deletes up to 10 buckets
-- of the queue that are full again (the same as none), not of the keys it takes.
--
-- Returns, per key taken for, what was granted and in how many milliseconds its bucket will hold a
-- token again (none while the queue is paused), and a row without a key if the queue is limited
-- per key: no row at all, it has no such limit (any more).
WITH RECURSIVE keys_before AS (
    (SELECT m.concurrency_key AS key FROM pgqueue.message m
      WHERE m.queue = :queue AND m.concurrency_key < :after_key
      ORDER BY m.concurrency_key DESC LIMIT 1)
    UNION ALL
    SELECT (SELECT m.concurrency_key FROM pgqueue.message m
             WHERE m.queue = :queue AND m.concurrency_key < k.key
             ORDER BY m.concurrency_key DESC LIMIT 1)
      FROM keys_before k
     WHERE k.key IS NOT NULL
),
keys_from_last AS (
    (SELECT m.concurrency_key AS key FROM pgqueue.message m
      WHERE m.queue = :queue AND m.concurrency_key IS NOT NULL
      ORDER BY m.concurrency_key DESC LIMIT 1)
    UNION ALL
    SELECT (SELECT m.concurrency_key FROM pgqueue.message m
             WHERE m.queue = :queue AND m.concurrency_key < k.key
             ORDER BY m.concurrency_key DESC LIMIT 1)
      FROM keys_from_last k
     WHERE k.key IS NOT NULL AND k.key >= :after_key
),
limited AS MATERIALIZED (
    SELECT q.rate_limit_per_key_permits * 1000.0 / q.rate_limit_per_key_period_ms AS rate,
           greatest(1, floor(q.rate_limit_per_key_permits * 1000.0 / q.rate_limit_per_key_period_ms))::int AS burst
      FROM pgqueue.queue q
     WHERE q.name = :queue AND q.rate_limit_per_key_permits IS NOT NULL
),
ready AS (
    SELECT k.key FROM keys_before k
     CROSS JOIN LATERAL (SELECT 1 FROM pgqueue.message m
                          WHERE m.queue = :queue AND m.concurrency_key = k.key AND m.visible_at <= now()
                          LIMIT 1) visible
     WHERE k.key IS NOT NULL
),
ready_from_last AS (
    SELECT k.key FROM keys_from_last k
     CROSS JOIN LATERAL (SELECT 1 FROM pgqueue.message m
                          WHERE m.queue = :queue AND m.concurrency_key = k.key AND m.visible_at <= now()
                          LIMIT 1) visible
     WHERE k.key IS NOT NULL AND k.key >= :after_key
),
keys AS MATERIALIZED (
    SELECT k.key FROM ((SELECT key, 1 AS part FROM ready LIMIT :wanted)
                       UNION ALL
                       (SELECT key, 2 FROM ready_from_last LIMIT :wanted)) k
     WHERE EXISTS (SELECT 1 FROM limited)
       AND NOT EXISTS (SELECT 1 FROM pgqueue.queue WHERE name = :queue AND paused)
     ORDER BY k.part, k.key DESC
     LIMIT :wanted
),
share AS MATERIALIZED (
    SELECT ceil(:wanted::numeric / greatest(1, count(*)))::int AS n FROM keys
),
full_again AS (
    DELETE FROM pgqueue.key_rate_bucket
     WHERE ctid = ANY (ARRAY(
           SELECT b.ctid FROM pgqueue.key_rate_bucket b
            WHERE b.queue = :queue AND (SELECT random()) < 0.05
              AND b.tokens + b.rate * extract(epoch FROM clock_timestamp() - b.refilled_at) >= b.burst
              AND b.key NOT IN (SELECT key FROM keys)
            LIMIT 10
              FOR UPDATE SKIP LOCKED))
),
taken AS (
INSERT INTO pgqueue.key_rate_bucket AS b (queue, key, rate, burst, tokens, refilled_at, granted)
SELECT :queue, k.key, l.rate, l.burst, l.burst - least(s.n, l.burst), clock_timestamp(), least(s.n, l.burst)
  FROM keys k
 CROSS JOIN limited l
 CROSS JOIN share s
 ORDER BY k.key
ON CONFLICT (queue, key) DO UPDATE
   SET (rate, burst, tokens, refilled_at, granted) = (
        SELECT excluded.rate, excluded.burst, a.available - g.granted, a.at, g.granted
          FROM (SELECT clock_timestamp() AS at) c
         CROSS JOIN LATERAL (
                SELECT c.at, least(excluded.burst::double precision,
                                   b.tokens + excluded.rate * greatest(0, extract(epoch FROM c.at - b.refilled_at)))
                       AS available) a
         CROSS JOIN LATERAL (
                SELECT least(floor(a.available)::int, excluded.granted) AS granted) g)
RETURNING b.key, b.granted, ceil(greatest(0, 1 - b.tokens) / b.rate * 1000)::bigint AS next_in_ms
)
SELECT key, granted, next_in_ms FROM taken
UNION ALL
SELECT NULL, NULL, NULL WHERE EXISTS (SELECT 1 FROM limited);

-- name: give_back_key_tokens
-- Gives back the tokens of the keys' grants that a claim did not use (:keys and :unused, side by
-- side), up to each bucket's burst, as give_back_tokens does. The buckets are locked in key order
-- first, the order take_key_tokens locks them in, so that neither waits for the other in a cycle.
WITH locked AS MATERIALIZED (
    SELECT b.key FROM pgqueue.key_rate_bucket b
     WHERE b.queue = :queue AND b.key = ANY (:keys::text[])
     ORDER BY b.key
       FOR UPDATE
)
UPDATE pgqueue.key_rate_bucket b
   SET tokens = least(b.burst, b.tokens + r.unused)
  FROM unnest(:keys::text[], :unused::int[]) AS r(key, unused)
 WHERE b.queue = :queue AND b.key = r.key AND (SELECT count(*) FROM locked) >= 0;

-- name: key_limits
-- Every queue with a limit per key, of messages in flight (V25) or of their rate (V26): its key's
-- header, the limits, and how many of its messages wait for them (QueueAdmin.keyLimits): per key,
-- its visible messages beyond what the limits let out now, summed over the keys. What they let out
-- is the in-flight limit N and, with a rate limit, the whole tokens the key's bucket holds refilled
-- to this moment (a key without a bucket has a full one), the smaller of the two. A claimed message
-- keeps its visible_at in both modes, so the visible ones include those in flight: a key with N in
-- flight and M more visible has M waiting, a key with fewer than N visible none. A message without
-- a key is never held back by them. Counted per queue in key order from message_concurrency_idx
-- (the keyed messages only, read from the index).
SELECT q.name, q.concurrency_key, q.max_in_flight_per_key, q.rate_limit_per_key_permits,
       q.rate_limit_per_key_period_ms,
       COALESCE((SELECT sum(greatest(0, k.visible - least(COALESCE(q.max_in_flight_per_key, k.visible),
                                                           COALESCE(floor(t.tokens), k.visible))))
                   FROM (SELECT m.concurrency_key AS key, count(*) AS visible
                           FROM pgqueue.message m
                          WHERE m.queue = q.name AND m.concurrency_key IS NOT NULL AND m.visible_at <= now()
                          GROUP BY m.concurrency_key) k
                   LEFT JOIN LATERAL (
                        SELECT COALESCE((SELECT least(b.burst, b.tokens + b.rate * greatest(0,
                                                      extract(epoch FROM clock_timestamp() - b.refilled_at)))
                                           FROM pgqueue.key_rate_bucket b
                                          WHERE b.queue = q.name AND b.key = k.key),
                                        greatest(1, floor(q.rate_limit_per_key_permits * 1000.0
                                                          / q.rate_limit_per_key_period_ms))) AS tokens
                         WHERE q.rate_limit_per_key_permits IS NOT NULL) t ON true), 0)::bigint AS waiting
  FROM pgqueue.queue q
 WHERE q.max_in_flight_per_key IS NOT NULL OR q.rate_limit_per_key_permits IS NOT NULL
 ORDER BY q.name;
