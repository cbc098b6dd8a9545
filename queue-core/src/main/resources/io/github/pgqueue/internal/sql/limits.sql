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
-- Which of :queues have a rate limit: read when a listener starts; its pollers take tokens for
-- those queues only.
SELECT name FROM pgqueue.queue WHERE name = ANY (:queues::text[]) AND rate_limit_permits IS NOT NULL;

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

-- name: key_limits
-- Every queue with an in-flight limit per key (V25): its key's header, the limit, and how many of
-- its messages wait for the limit (QueueAdmin.keyLimits): per key, its visible messages beyond the
-- limit, summed over the keys. A claimed message keeps its visible_at in both modes, so the visible
-- ones include those in flight: a key with N in flight and M more visible has M waiting, a key with
-- fewer than N visible none. A message without a key is never held back by the limit. Counted per
-- queue in key order from message_concurrency_idx (the keyed messages only, read from the index).
SELECT q.name, q.concurrency_key, q.max_in_flight_per_key,
       COALESCE((SELECT sum(greatest(0, k.visible - q.max_in_flight_per_key))
                   FROM (SELECT count(*) AS visible
                           FROM pgqueue.message m
                          WHERE m.queue = q.name AND m.concurrency_key IS NOT NULL AND m.visible_at <= now()
                          GROUP BY m.concurrency_key) k), 0)::bigint AS waiting
  FROM pgqueue.queue q
 WHERE q.max_in_flight_per_key IS NOT NULL
 ORDER BY q.name;
