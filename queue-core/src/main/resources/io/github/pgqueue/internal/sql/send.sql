-- The statements that send: they run on the caller's connection, in its transaction if it has one.
-- A delay is added on the server, so the clocks of the application's hosts do not matter.

-- name: send
-- One message with its options; :not_before (or, when null, now plus :delay_ms) is when it becomes
-- visible. Its concurrency key is the value of the header its queue's definition names (V25),
-- looked up only for a message with headers.
INSERT INTO pgqueue.message (queue, payload, headers, priority, visible_at, max_attempts, group_key, concurrency_key)
VALUES (:queue, :payload::jsonb, :headers::jsonb, :priority,
        COALESCE(:not_before, now() + :delay_ms * interval '1 millisecond'), :max_attempts, :group_key,
        CASE WHEN :headers::jsonb <> '{}'::jsonb
             THEN :headers::jsonb ->> (SELECT q.concurrency_key FROM pgqueue.queue q WHERE q.name = :queue) END)
RETURNING id;

-- name: send_plain
-- One message without options: the column defaults apply.
INSERT INTO pgqueue.message (queue, payload) VALUES (:queue, :payload::jsonb) RETURNING id;

-- name: send_deduplicated
-- Inserts unless a message with :deduplication_key is in the queue, or, in a queue with a
-- deduplication window, completed within the window (V20), and returns the id (the existing or kept
-- message's) with whether it was inserted. A message with the key committed by another transaction
-- after this statement's snapshot conflicts but is not seen: no row comes back, and the caller runs
-- the statement again.
WITH inserted AS (
    INSERT INTO pgqueue.message (queue, payload, headers, priority, visible_at, max_attempts,
                                 group_key, deduplication_key, concurrency_key)
    VALUES (:queue, :payload::jsonb, :headers::jsonb, :priority,
            COALESCE(:not_before, now() + :delay_ms * interval '1 millisecond'), :max_attempts,
            :group_key, :deduplication_key,
            CASE WHEN :headers::jsonb <> '{}'::jsonb
                 THEN :headers::jsonb ->> (SELECT q.concurrency_key FROM pgqueue.queue q WHERE q.name = :queue) END)
    ON CONFLICT (queue, deduplication_key) WHERE deduplication_key IS NOT NULL DO NOTHING
    RETURNING id
)
SELECT id, true AS inserted FROM inserted
UNION ALL
SELECT e.id, false
  FROM (SELECT COALESCE((SELECT m.id FROM pgqueue.message m
                          WHERE m.queue = :queue AND m.deduplication_key = :deduplication_key),
                        (SELECT k.message_id FROM pgqueue.deduplication_key k
                          WHERE k.queue = :queue AND k.key = :deduplication_key
                            AND (k.kept_until IS NULL OR k.kept_until >= now()))) AS id) e
 WHERE e.id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM inserted);

-- name: send_batch
-- One statement per batch; ids come from one sequence, so sorted ids follow the payloads' order.
INSERT INTO pgqueue.message (queue, payload, headers, priority, visible_at, max_attempts, group_key, concurrency_key)
SELECT :queue, p.payload::jsonb, :headers::jsonb, :priority,
       COALESCE(:not_before, now() + :delay_ms * interval '1 millisecond'), :max_attempts, :group_key,
       CASE WHEN :headers::jsonb <> '{}'::jsonb
            THEN :headers::jsonb ->> (SELECT q.concurrency_key FROM pgqueue.queue q WHERE q.name = :queue) END
  FROM unnest(:payloads::text[]) WITH ORDINALITY AS p(payload, n)
 ORDER BY p.n
RETURNING id;

-- name: send_grouped_batch
-- send_batch for a FIFO group: the batch's rows come with their previous_id, ordered once per
-- batch rather than by the insert trigger once per row (V16).
SELECT b.id
  FROM pgqueue.send_batch_to_group(:queue, :headers::jsonb, :priority, :not_before, :delay_ms, :max_attempts,
                                   :group_key, :payloads::text[]) AS b(id);

-- name: publish
-- One message per queue bound to :exchange whose binding matches :routing_key, in one statement.
-- A queue that already holds a message with the deduplication key gets none. Every binding's key
-- is stored as a regular expression over the key's words, each with a '.' before it: '.' || key,
-- but '' for the empty key, which has no word (fanout: the empty one).
INSERT INTO pgqueue.message (queue, payload, headers, priority, visible_at, max_attempts, deduplication_key,
                             group_key, concurrency_key)
SELECT q.queue, :payload::jsonb, :headers::jsonb, :priority,
       COALESCE(:not_before, now() + :delay_ms * interval '1 millisecond'), :max_attempts, :deduplication_key,
       :group_key,
       CASE WHEN :headers::jsonb <> '{}'::jsonb
            THEN :headers::jsonb ->> (SELECT d.concurrency_key FROM pgqueue.queue d WHERE d.name = q.queue) END
  FROM (SELECT DISTINCT b.queue FROM pgqueue.binding b
         WHERE b.exchange = :exchange
           AND (CASE WHEN :routing_key = '' THEN '' ELSE '.' || :routing_key END) ~ b.key_regex) q
ON CONFLICT (queue, deduplication_key) WHERE deduplication_key IS NOT NULL DO NOTHING
RETURNING id, queue;

-- name: unroutable_policy
-- What an exchange does with a message no binding matches; no row if it is not declared.
SELECT unroutable FROM pgqueue.exchange WHERE name = :exchange;
