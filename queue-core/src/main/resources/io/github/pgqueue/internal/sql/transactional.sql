-- The statements of transactional mode: a claim runs inside the transaction that runs the
-- handlers, takes transaction-scoped advisory locks (the same keys as a session's, so messages
-- held any way are skipped and counted in flight) and row locks on the rows it returns; the
-- completions run in that transaction too. Nothing is written at claim: the attempt shown to a
-- handler is attempts + 1, stored only if the attempt fails (or by claim_suspect of session.sql if
-- the consumer dies). Words as in session.sql.

-- name: claim_walk
-- Claims up to {batch} messages from the head of :queue.
--
-- walked: walks the claim index as session.sql's claim_walk does, taking a transaction lock on
-- each candidate, one at a time, until the batch is full. Skipped before their key is tried:
-- a row written or locked by a transaction that had not ended when the statement's snapshot was
-- taken (in the snapshot's list, or at or past its xmax). With several consumers the head of a
-- queue is where the others complete their batches; once such a completion commits, its keys are
-- free while this snapshot still shows its rows, and a claim that took those keys found the rows
-- gone when it locked them, and came back short or empty at a full claim's cost. xmax has no
-- epoch: it is compared with the snapshot's by the low 32 bits, modulo 2^32, as PostgreSQL
-- compares xids. A row of a FIFO group that is not its group's head is skipped too, its head test
-- looking backwards from the row and no lower than its previous_id (V15), so no key is taken of a
-- row the claim cannot deliver.
--
-- The window ({batch} + 1000) is a number of rows walked, not of rows that pass the tests: a claim
-- that cannot fill its batch (groups in flight, heads acked since its snapshot) would otherwise
-- walk the whole backlog. A claim that walks its window to the end without filling its batch
-- returns the window's last row (kind 'window_end', the first priority's) and its poller goes on
-- from there at once, so groups behind rows it cannot take are still reached; where windows keep
-- ending so, the poller switches to claim_scanning_heads.
--
-- suspicion: a taken row is a suspect when the last transaction that locked it aborted and was no
-- recorded removal's (consumer_aborted, V19), or HELD_BY_THE_DEAD; judged in the walk on the
-- statement's snapshot, and again once the keys are taken (listed_by_dead: the snapshot can
-- predate a session's claim and death). A row no transaction ever locked (xmax 0, the common
-- case) skips locker_aborted, which costs tens of microseconds. Suspects are returned by id
-- (kind 'suspect') for session.sql's claim_suspect, which counts their attempt and runs them
-- alone; the test runs on the taken rows only (in the walk, beside the group test, it led the
-- planner to a plan that drained grouped queues slowly).
--
-- claimed: the row locks, on the rows returned only. A row changed since the snapshot is re-read
-- (EvalPlanQual) and skipped if it is gone, no longer visible or claimed open. The ids are an
-- array, not an IN (subquery): a generic plan would guess thousands of rows and hash-join a scan
-- of the table; with an array it looks them up by primary key.
--
-- Result: the claimed messages (kind 'claimed', columns as session.sql's claims, with
-- visible_at_us: where the next claim goes on after a full batch), the suspects, the window end,
-- and the 'next_due' row when nothing was taken, or when the batch is short and a claim right
-- after it could find nothing more (as session.sql's claim_walk: no row of a FIFO group, none
-- locked by another since the walk, no window end, no suspect).
WITH RECURSIVE priorities AS (
    (SELECT priority FROM pgqueue.message
      WHERE queue = :queue AND NOT EXISTS (SELECT 1 FROM pgqueue.queue WHERE name = :queue AND paused)
      ORDER BY priority LIMIT 1)
    UNION ALL
    SELECT (SELECT m.priority FROM pgqueue.message m
             WHERE m.queue = :queue AND m.priority > p.priority
             ORDER BY m.priority LIMIT 1)
      FROM priorities p
     WHERE p.priority IS NOT NULL
),
walked AS MATERIALIZED (
    SELECT w.id, w.priority, w.visible_at, w.n, w.n < {batch} + 1000 AS taken, w.group_key IS NOT NULL AS grouped,
           w.n < {batch} + 1000
           AND ((w.claim_open AND w.claimed_at > pg_postmaster_start_time())
                OR w.id IN (SELECT unnest(CASE WHEN h.in_turn THEN h.ids[1:1] ELSE h.ids END)
                              FROM pgqueue.holding h WHERE (h.queue = :queue OR h.queue IS NULL)
                                                       AND h.opened_at > pg_postmaster_start_time() AND h.ids <> '{}')
                OR CASE WHEN w.xmax = '0'::xid OR NOT pgqueue.locker_aborted(w.xmax) THEN false
                        ELSE pgqueue.consumer_aborted(w.xmax) END) AS suspect
      FROM priorities p
     CROSS JOIN LATERAL (
            SELECT m.id, m.queue, m.priority, m.visible_at, m.xmax, m.group_key, m.previous_id,
                   m.claim_open, m.claimed_at, row_number() OVER (ORDER BY m.visible_at, m.id) AS n
              FROM pgqueue.message m
             WHERE m.queue = :queue AND m.priority = p.priority AND m.visible_at <= now()
               AND m.headers @> ANY (:filter::jsonb[]) AND m.headers <> '{}'::jsonb -- if filtered
             ORDER BY m.visible_at, m.id
             LIMIT {batch} + 1000) w
     WHERE CASE WHEN w.n = {batch} + 1000 THEN true
                WHEN (w.xmax <> '0'::xid
                      AND (w.xmax::text::bigint = ANY (ARRAY(SELECT x::text::bigint & 4294967295
                                                               FROM pg_snapshot_xip(pg_current_snapshot()) x))
                           OR ((w.xmax::text::bigint - (SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint))
                               & 4294967295) < 2147483648)) THEN false
                WHEN w.group_key IS NOT NULL
                     AND (SELECT o.id FROM pgqueue.message o
                           WHERE o.queue = w.queue AND o.group_key = w.group_key AND o.id < w.id
                             AND o.id >= COALESCE(w.previous_id, 0)
                           ORDER BY o.id DESC LIMIT 1) IS NOT NULL THEN false
                ELSE pg_try_advisory_xact_lock(:namespace, w.id::bit(32)::int4) END
     LIMIT {batch}
),
taken AS (
    SELECT id, suspect FROM walked WHERE taken
),
listed_by_dead AS MATERIALIZED (
    SELECT pgqueue.listed_by_the_dead(:queue, ARRAY(SELECT id FROM taken)) AS ids WHERE EXISTS (SELECT 1 FROM taken)
),
suspicion AS (
    SELECT t.id, t.suspect OR COALESCE(t.id = ANY ((SELECT ids FROM listed_by_dead)::bigint[]), false) AS suspect
      FROM taken t
),
claimed AS (
    SELECT m.id, m.queue, m.payload, m.headers, m.priority, m.visible_at, m.attempts,
           m.max_attempts, m.created_at, m.last_error
      FROM pgqueue.message m
     WHERE m.id = ANY (ARRAY(SELECT id FROM suspicion WHERE NOT suspect))
       AND (m.queue = :queue) IS TRUE AND m.visible_at <= now()
       AND NOT (m.claim_open AND m.claimed_at > pg_postmaster_start_time())
       FOR UPDATE OF m SKIP LOCKED
)
(SELECT c.id, 'claimed' AS kind,
        CASE WHEN octet_length(p.text) <= :payload_limit THEN p.text END AS payload,
        c.headers::text AS headers, c.priority, c.attempts + 1 AS attempt, c.created_at,
        COALESCE(c.max_attempts, q.max_attempts, 5) AS max_attempts,
        q.dead_letter_queue,
        (q.retention_ms IS NOT NULL OR q.deduplication_window_ms IS NOT NULL) AS keeps,
        COALESCE(q.backoff_initial_ms, 1000) AS backoff_initial_ms,
        COALESCE(q.backoff_multiplier, 2.0) AS backoff_multiplier,
        COALESCE(q.backoff_max_ms, 600000) AS backoff_max_ms,
        c.last_error,
        octet_length(p.text) AS payload_bytes,
        (extract(epoch FROM c.visible_at) * 1000000)::bigint AS visible_at_us,
        NULL::int AS groups_scanned,
        NULL::bigint AS next_due_ms
   FROM claimed c
   LEFT JOIN LATERAL (SELECT c.payload::text AS text) p ON true
   LEFT JOIN pgqueue.queue q ON q.name = c.queue
  ORDER BY c.priority, c.visible_at, c.id)
UNION ALL
SELECT id, 'suspect', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
  FROM suspicion WHERE suspect
UNION ALL
(SELECT e.id, 'window_end', NULL, NULL, e.priority, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
        (extract(epoch FROM e.visible_at) * 1000000)::bigint,
        NULL, NULL
   FROM walked e
  WHERE NOT e.taken
  ORDER BY e.priority LIMIT 1)
UNION ALL
SELECT NULL, 'next_due', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
       (SELECT ceil(extract(epoch FROM min(n.visible_at) - now()) * 1000)::bigint
          FROM priorities p
         CROSS JOIN LATERAL (
                SELECT m.visible_at FROM pgqueue.message m
                 WHERE m.queue = :queue AND m.priority = p.priority
                   AND m.visible_at > now() AND m.visible_at < 'infinity'
                 ORDER BY m.visible_at LIMIT 1) n)
 WHERE NOT EXISTS (SELECT 1 FROM taken)
    OR ((SELECT count(*) FROM claimed) < {batch}
        AND NOT EXISTS (SELECT 1 FROM walked WHERE grouped OR NOT taken OR id NOT IN (SELECT id FROM claimed))
        AND NOT EXISTS (SELECT 1 FROM suspicion WHERE suspect));

-- name: claim_fair
-- claim_walk for a queue whose definition names a concurrency key (V25), as session.sql's
-- claim_fair (the cursor's test of a lower priority too): walked takes the batch but for the reserved rows after the cursor (from the head
-- without one), as claim_walk or claim_walk_after walks; heads takes, for each key the walk did not
-- reach, round robin in descending key order before :after_key, its first message a claim may take
-- after the cursor, with claim_walk's tests (the snapshot's writers, the FIFO head) before its
-- transaction lock. A queue with a max_in_flight_per_key (V25) also has each message take one of
-- its key's slots for the transaction (take_slot), after the message's own lock: a message whose
-- key has no slot left keeps the message lock until the transaction ends but is not claimed. Every
-- row says the last key the heads served (next_key); claimed rows say whether a head took them
-- (head: the poller's cursor goes on after the walk only) and whether the walk took all it could
-- (walk_full: the claim counts as full). A queue limited per key (V26) has each keyed message take
-- one of its key's tokens granted for this claim (:grants) with its slot (take_key_turn), as
-- session.sql's claim_fair; every row says the tokens left (grants_left).
WITH RECURSIVE cursor AS (SELECT :after_priority::int AS priority,
                                 COALESCE('epoch'::timestamptz + :after_visible_at_us::bigint * interval '1 microsecond',
                                          '-infinity'::timestamptz) AS visible_at,
                                 COALESCE(:after_id::bigint, 0) AS id),
all_priorities AS (
    (SELECT priority FROM pgqueue.message
      WHERE queue = :queue AND NOT EXISTS (SELECT 1 FROM pgqueue.queue WHERE name = :queue AND paused)
      ORDER BY priority LIMIT 1)
    UNION ALL
    SELECT (SELECT m.priority FROM pgqueue.message m
             WHERE m.queue = :queue AND m.priority > p.priority
             ORDER BY m.priority LIMIT 1)
      FROM all_priorities p
     WHERE p.priority IS NOT NULL
),
priorities AS (
    SELECT priority FROM all_priorities WHERE priority IS NOT NULL AND :after_priority::int IS NULL
    UNION ALL
    SELECT c.priority FROM cursor c
     WHERE c.priority IS NOT NULL
       AND COALESCE((SELECT m.priority FROM pgqueue.message m WHERE m.queue = :queue
                      ORDER BY m.priority LIMIT 1) >= c.priority, true)
       AND NOT EXISTS (SELECT 1 FROM pgqueue.queue WHERE name = :queue AND paused)
),
slots AS MATERIALIZED (
    SELECT (SELECT q.max_in_flight_per_key FROM pgqueue.queue q WHERE q.name = :queue) AS per_key
),
key_grants AS MATERIALIZED (
    SELECT :grants::jsonb AS g -- parsed once
),
keys_before AS (
    (SELECT m.concurrency_key AS key FROM pgqueue.message m
      WHERE m.queue = :queue AND m.concurrency_key < :after_key
        AND NOT EXISTS (SELECT 1 FROM pgqueue.queue WHERE name = :queue AND paused)
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
        AND NOT EXISTS (SELECT 1 FROM pgqueue.queue WHERE name = :queue AND paused)
      ORDER BY m.concurrency_key DESC LIMIT 1)
    UNION ALL
    SELECT (SELECT m.concurrency_key FROM pgqueue.message m
             WHERE m.queue = :queue AND m.concurrency_key < k.key
             ORDER BY m.concurrency_key DESC LIMIT 1)
      FROM keys_from_last k
     WHERE k.key IS NOT NULL AND k.key >= :after_key
),
keys AS MATERIALIZED (
    SELECT k.key, k.part FROM ((SELECT key, 1 AS part FROM keys_before WHERE key IS NOT NULL LIMIT {batch})
                               UNION ALL
                               (SELECT key, 2 FROM keys_from_last WHERE key IS NOT NULL AND key >= :after_key LIMIT {batch})) k
     ORDER BY k.part, k.key DESC
     LIMIT {batch}
),
reserved AS MATERIALIZED (
    SELECT CASE WHEN count(*) > 1 THEN least(count(*) - 1, {batch} / 2) ELSE 0 END AS n FROM keys
),
walked AS MATERIALIZED (
    SELECT w.id, w.priority, w.visible_at, w.n, w.n < {batch} + 1000 AS taken, w.concurrency_key,
           w.n < {batch} + 1000
           AND ((w.claim_open AND w.claimed_at > pg_postmaster_start_time())
                OR w.id IN (SELECT unnest(CASE WHEN h.in_turn THEN h.ids[1:1] ELSE h.ids END)
                              FROM pgqueue.holding h WHERE (h.queue = :queue OR h.queue IS NULL)
                                                       AND h.opened_at > pg_postmaster_start_time() AND h.ids <> '{}')
                OR CASE WHEN w.xmax = '0'::xid OR NOT pgqueue.locker_aborted(w.xmax) THEN false
                        ELSE pgqueue.consumer_aborted(w.xmax) END) AS suspect
      FROM priorities p
     CROSS JOIN cursor c
     CROSS JOIN LATERAL (
            SELECT m.id, m.queue, m.priority, m.visible_at, m.xmax, m.group_key, m.previous_id,
                   m.claim_open, m.claimed_at, m.concurrency_key, row_number() OVER (ORDER BY m.visible_at, m.id) AS n
              FROM pgqueue.message m
             WHERE m.queue = :queue AND m.priority = p.priority AND m.visible_at <= now()
               AND m.headers @> ANY (:filter::jsonb[]) AND m.headers <> '{}'::jsonb -- if filtered
               AND (m.visible_at, m.id) > (c.visible_at, c.id)
             ORDER BY m.visible_at, m.id
             LIMIT {batch} + 1000) w
     WHERE CASE WHEN w.n = {batch} + 1000 THEN true
                WHEN (w.xmax <> '0'::xid
                      AND (w.xmax::text::bigint = ANY (ARRAY(SELECT x::text::bigint & 4294967295
                                                               FROM pg_snapshot_xip(pg_current_snapshot()) x))
                           OR ((w.xmax::text::bigint - (SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint))
                               & 4294967295) < 2147483648)) THEN false
                WHEN w.group_key IS NOT NULL
                     AND (SELECT o.id FROM pgqueue.message o
                           WHERE o.queue = w.queue AND o.group_key = w.group_key AND o.id < w.id
                             AND o.id >= COALESCE(w.previous_id, 0)
                           ORDER BY o.id DESC LIMIT 1) IS NOT NULL THEN false
                WHEN w.concurrency_key IS NULL OR ((SELECT per_key FROM slots) IS NULL AND (SELECT g FROM key_grants) IS NULL)
                THEN pg_try_advisory_xact_lock(:namespace, w.id::bit(32)::int4)
                ELSE ((SELECT g FROM key_grants) IS NULL
                      OR (COALESCE(((SELECT g FROM key_grants) -> 'left' ->> w.concurrency_key)::int, 0) > 0
                          AND pgqueue.key_tokens_left(w.concurrency_key, (SELECT g FROM key_grants)) > 0))
                     AND pg_try_advisory_xact_lock(:namespace, w.id::bit(32)::int4)
                     AND pgqueue.take_key_turn(:namespace, :queue, w.concurrency_key, (SELECT per_key FROM slots), true,
                                               (SELECT g FROM key_grants)) END
     LIMIT {batch} - (SELECT n FROM reserved)
),
heads AS MATERIALIZED (
    SELECT h.id, h.priority, h.visible_at, k.key, k.part,
           ((h.claim_open AND h.claimed_at > pg_postmaster_start_time())
            OR h.id IN (SELECT unnest(CASE WHEN o.in_turn THEN o.ids[1:1] ELSE o.ids END)
                          FROM pgqueue.holding o WHERE (o.queue = :queue OR o.queue IS NULL)
                                                   AND o.opened_at > pg_postmaster_start_time() AND o.ids <> '{}')
            OR CASE WHEN h.xmax = '0'::xid OR NOT pgqueue.locker_aborted(h.xmax) THEN false
                    ELSE pgqueue.consumer_aborted(h.xmax) END) AS suspect
      FROM keys k
     CROSS JOIN cursor c
     CROSS JOIN LATERAL (
            SELECT m.id, m.priority, m.visible_at, m.xmax, m.claim_open, m.claimed_at
              FROM pgqueue.message m
             WHERE m.queue = :queue AND m.concurrency_key = k.key AND m.visible_at <= now()
               AND (m.concurrency_key, m.priority, m.visible_at, m.id)
                   > (k.key, COALESCE(c.priority, -2147483648), c.visible_at, c.id) -- the concurrency index's columns
               AND m.headers @> ANY (:filter::jsonb[]) AND m.headers <> '{}'::jsonb -- if filtered
               AND NOT (m.xmax <> '0'::xid
                        AND (m.xmax::text::bigint = ANY (ARRAY(SELECT x::text::bigint & 4294967295
                                                                 FROM pg_snapshot_xip(pg_current_snapshot()) x))
                             OR ((m.xmax::text::bigint - (SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint))
                                 & 4294967295) < 2147483648))
               AND (m.group_key IS NULL
                    OR (SELECT o.id FROM pgqueue.message o
                         WHERE o.queue = m.queue AND o.group_key = m.group_key AND o.id < m.id
                           AND o.id >= COALESCE(m.previous_id, 0)
                         ORDER BY o.id DESC LIMIT 1) IS NULL)
               AND pg_try_advisory_xact_lock(:namespace, m.id::bit(32)::int4)
               AND (((SELECT per_key FROM slots) IS NULL AND (SELECT g FROM key_grants) IS NULL)
                    OR pgqueue.take_key_turn(:namespace, :queue, m.concurrency_key, (SELECT per_key FROM slots), true,
                                             (SELECT g FROM key_grants)))
             ORDER BY m.priority, m.visible_at, m.id
             LIMIT 1) h
     WHERE k.key NOT IN (SELECT concurrency_key FROM walked WHERE taken AND concurrency_key IS NOT NULL)
       AND ((SELECT g FROM key_grants) IS NULL OR ((SELECT g FROM key_grants) -> 'left' ->> k.key)::int > 0)
     LIMIT {batch} - (SELECT count(*) FROM walked WHERE taken)
),
taken AS (
    SELECT id, suspect FROM heads
    UNION ALL
    SELECT id, suspect FROM walked WHERE taken
),
grants_left AS MATERIALIZED (
    SELECT CASE WHEN (SELECT count(*) FROM taken) >= 0
                THEN (CASE WHEN g.state -> 'claim' = (SELECT g FROM key_grants) -> 'claim' THEN g.state ELSE (SELECT g FROM key_grants) END
                      -> 'left')::text END AS left_over
      FROM (SELECT NULLIF(current_setting('pgqueue_claim.grants', true), '')::jsonb AS state) g
),
listed_by_dead AS MATERIALIZED (
    SELECT pgqueue.listed_by_the_dead(:queue, ARRAY(SELECT id FROM taken)) AS ids WHERE EXISTS (SELECT 1 FROM taken)
),
suspicion AS (
    SELECT t.id, t.suspect OR COALESCE(t.id = ANY ((SELECT ids FROM listed_by_dead)::bigint[]), false) AS suspect
      FROM taken t
),
claimed AS (
    SELECT m.id, m.queue, m.payload, m.headers, m.priority, m.visible_at, m.attempts,
           m.max_attempts, m.created_at, m.last_error
      FROM pgqueue.message m
     WHERE m.id = ANY (ARRAY(SELECT id FROM suspicion WHERE NOT suspect))
       AND (m.queue = :queue) IS TRUE AND (m.visible_at <= now()) IS TRUE
       AND NOT (m.claim_open AND m.claimed_at > pg_postmaster_start_time())
       FOR UPDATE OF m SKIP LOCKED
)
(SELECT c.id, 'claimed' AS kind,
        CASE WHEN octet_length(p.text) <= :payload_limit THEN p.text END AS payload,
        c.headers::text AS headers, c.priority, c.attempts + 1 AS attempt, c.created_at,
        COALESCE(c.max_attempts, q.max_attempts, 5) AS max_attempts,
        q.dead_letter_queue,
        (q.retention_ms IS NOT NULL OR q.deduplication_window_ms IS NOT NULL) AS keeps,
        COALESCE(q.backoff_initial_ms, 1000) AS backoff_initial_ms,
        COALESCE(q.backoff_multiplier, 2.0) AS backoff_multiplier,
        COALESCE(q.backoff_max_ms, 600000) AS backoff_max_ms,
        c.last_error,
        octet_length(p.text) AS payload_bytes,
        (extract(epoch FROM c.visible_at) * 1000000)::bigint AS visible_at_us,
        NULL::int AS groups_scanned,
        NULL::bigint AS next_due_ms,
        (SELECT h.key FROM heads h ORDER BY h.part DESC, h.key LIMIT 1) AS next_key,
        c.id IN (SELECT id FROM heads) AS head,
        (SELECT count(*) FROM walked WHERE taken) = {batch} - (SELECT n FROM reserved) AS walk_full,
        (SELECT left_over FROM grants_left) AS grants_left
   FROM claimed c
   LEFT JOIN LATERAL (SELECT c.payload::text AS text) p ON true
   LEFT JOIN pgqueue.queue q ON q.name = c.queue
  ORDER BY c.priority, c.visible_at, c.id)
UNION ALL
SELECT id, 'suspect', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
       (SELECT h.key FROM heads h ORDER BY h.part DESC, h.key LIMIT 1), NULL, NULL, (SELECT left_over FROM grants_left)
  FROM suspicion WHERE suspect
UNION ALL
(SELECT e.id, 'window_end', NULL, NULL, e.priority, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
        (extract(epoch FROM e.visible_at) * 1000000)::bigint,
        NULL, NULL, (SELECT h.key FROM heads h ORDER BY h.part DESC, h.key LIMIT 1), NULL, NULL,
        (SELECT left_over FROM grants_left)
   FROM walked e
  WHERE NOT e.taken
  ORDER BY e.priority LIMIT 1)
UNION ALL
SELECT NULL, 'next_due', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
       (SELECT ceil(extract(epoch FROM min(n.visible_at) - now()) * 1000)::bigint
          FROM priorities p
         CROSS JOIN LATERAL (
                SELECT m.visible_at FROM pgqueue.message m
                 WHERE m.queue = :queue AND m.priority = p.priority
                   AND m.visible_at > now() AND m.visible_at < 'infinity'
                 ORDER BY m.visible_at LIMIT 1) n),
       NULL, NULL, NULL, (SELECT left_over FROM grants_left)
 WHERE NOT EXISTS (SELECT 1 FROM taken);

-- name: claim_walk_after
-- claim_walk, going on from a cursor (:after_priority, :after_visible_at_us, :after_id): where
-- this poller's last full batch ended, or the last row of a window its last claim walked to the
-- end. As session.sql's claim_walk_after.
WITH RECURSIVE cursor AS (SELECT :after_priority::int AS priority),
priorities AS (
    SELECT c.priority FROM cursor c
     WHERE NOT EXISTS (SELECT 1 FROM pgqueue.message WHERE queue = :queue AND priority < c.priority)
       AND NOT EXISTS (SELECT 1 FROM pgqueue.queue WHERE name = :queue AND paused)
),
walked AS MATERIALIZED (
    SELECT w.id, w.priority, w.visible_at, w.n, w.n < {batch} + 1000 AS taken,
           w.n < {batch} + 1000
           AND ((w.claim_open AND w.claimed_at > pg_postmaster_start_time())
                OR w.id IN (SELECT unnest(CASE WHEN h.in_turn THEN h.ids[1:1] ELSE h.ids END)
                              FROM pgqueue.holding h WHERE (h.queue = :queue OR h.queue IS NULL)
                                                       AND h.opened_at > pg_postmaster_start_time() AND h.ids <> '{}')
                OR CASE WHEN w.xmax = '0'::xid OR NOT pgqueue.locker_aborted(w.xmax) THEN false
                        ELSE pgqueue.consumer_aborted(w.xmax) END) AS suspect
      FROM priorities p
     CROSS JOIN LATERAL (
            SELECT m.id, m.queue, m.priority, m.visible_at, m.xmax, m.group_key, m.previous_id,
                   m.claim_open, m.claimed_at, row_number() OVER (ORDER BY m.visible_at, m.id) AS n
              FROM pgqueue.message m
             WHERE m.queue = :queue AND m.priority = p.priority AND m.visible_at <= now()
               AND m.headers @> ANY (:filter::jsonb[]) AND m.headers <> '{}'::jsonb -- if filtered
               AND (m.visible_at, m.id) > ('epoch'::timestamptz + :after_visible_at_us * interval '1 microsecond', :after_id)
             ORDER BY m.visible_at, m.id
             LIMIT {batch} + 1000) w
     WHERE CASE WHEN w.n = {batch} + 1000 THEN true
                WHEN (w.xmax <> '0'::xid
                      AND (w.xmax::text::bigint = ANY (ARRAY(SELECT x::text::bigint & 4294967295
                                                               FROM pg_snapshot_xip(pg_current_snapshot()) x))
                           OR ((w.xmax::text::bigint - (SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint))
                               & 4294967295) < 2147483648)) THEN false
                WHEN w.group_key IS NOT NULL
                     AND (SELECT o.id FROM pgqueue.message o
                           WHERE o.queue = w.queue AND o.group_key = w.group_key AND o.id < w.id
                             AND o.id >= COALESCE(w.previous_id, 0)
                           ORDER BY o.id DESC LIMIT 1) IS NOT NULL THEN false
                ELSE pg_try_advisory_xact_lock(:namespace, w.id::bit(32)::int4) END
     LIMIT {batch}
),
taken AS (
    SELECT id, suspect FROM walked WHERE taken
),
listed_by_dead AS MATERIALIZED (
    SELECT pgqueue.listed_by_the_dead(:queue, ARRAY(SELECT id FROM taken)) AS ids WHERE EXISTS (SELECT 1 FROM taken)
),
suspicion AS (
    SELECT t.id, t.suspect OR COALESCE(t.id = ANY ((SELECT ids FROM listed_by_dead)::bigint[]), false) AS suspect
      FROM taken t
),
claimed AS (
    SELECT m.id, m.queue, m.payload, m.headers, m.priority, m.visible_at, m.attempts,
           m.max_attempts, m.created_at, m.last_error
      FROM pgqueue.message m
     WHERE m.id = ANY (ARRAY(SELECT id FROM suspicion WHERE NOT suspect))
       AND (m.queue = :queue) IS TRUE AND m.visible_at <= now()
       AND NOT (m.claim_open AND m.claimed_at > pg_postmaster_start_time())
       FOR UPDATE OF m SKIP LOCKED
)
(SELECT c.id, 'claimed' AS kind,
        CASE WHEN octet_length(p.text) <= :payload_limit THEN p.text END AS payload,
        c.headers::text AS headers, c.priority, c.attempts + 1 AS attempt, c.created_at,
        COALESCE(c.max_attempts, q.max_attempts, 5) AS max_attempts,
        q.dead_letter_queue,
        (q.retention_ms IS NOT NULL OR q.deduplication_window_ms IS NOT NULL) AS keeps,
        COALESCE(q.backoff_initial_ms, 1000) AS backoff_initial_ms,
        COALESCE(q.backoff_multiplier, 2.0) AS backoff_multiplier,
        COALESCE(q.backoff_max_ms, 600000) AS backoff_max_ms,
        c.last_error,
        octet_length(p.text) AS payload_bytes,
        (extract(epoch FROM c.visible_at) * 1000000)::bigint AS visible_at_us,
        NULL::int AS groups_scanned,
        NULL::bigint AS next_due_ms
   FROM claimed c
   LEFT JOIN LATERAL (SELECT c.payload::text AS text) p ON true
   LEFT JOIN pgqueue.queue q ON q.name = c.queue
  ORDER BY c.priority, c.visible_at, c.id)
UNION ALL
SELECT id, 'suspect', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
  FROM suspicion WHERE suspect
UNION ALL
(SELECT e.id, 'window_end', NULL, NULL, e.priority, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
        (extract(epoch FROM e.visible_at) * 1000000)::bigint,
        NULL, NULL
   FROM walked e
  WHERE NOT e.taken
  ORDER BY e.priority LIMIT 1)
UNION ALL
SELECT NULL, 'next_due', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
       (SELECT ceil(extract(epoch FROM min(n.visible_at) - now()) * 1000)::bigint
          FROM priorities p
         CROSS JOIN LATERAL (
                SELECT m.visible_at FROM pgqueue.message m
                 WHERE m.queue = :queue AND m.priority = p.priority
                   AND m.visible_at > now() AND m.visible_at < 'infinity'
                 ORDER BY m.visible_at LIMIT 1) n)
 WHERE NOT EXISTS (SELECT 1 FROM taken);

-- name: claim_scanning_heads
-- claim_walk for a queue whose windows keep ending full of rows it cannot take: FIFO groups'
-- heads found through the group index (as session.sql's claim_scanning_heads), for up to
-- {batch} + 1000 groups in key order; the walk skips their rows untested, and their heads are
-- candidates after the walk's, in the claim index's order, skipped when written since the
-- snapshot. Its cost grows with the number of groups, not with the messages behind their heads.
-- groups_scanned (on the 'window_end' row) tells the poller when heads are not scarce any more.
WITH RECURSIVE priorities AS (
    (SELECT priority FROM pgqueue.message
      WHERE queue = :queue AND NOT EXISTS (SELECT 1 FROM pgqueue.queue WHERE name = :queue AND paused)
      ORDER BY priority LIMIT 1)
    UNION ALL
    SELECT (SELECT m.priority FROM pgqueue.message m
             WHERE m.queue = :queue AND m.priority > p.priority
             ORDER BY m.priority LIMIT 1)
      FROM priorities p
     WHERE p.priority IS NOT NULL
),
heads AS (
    (SELECT m.group_key, m.id FROM pgqueue.message m
      WHERE m.queue = :queue AND m.group_key IS NOT NULL
      ORDER BY m.group_key, m.id LIMIT 1)
    UNION ALL
    SELECT n.group_key, n.id
      FROM heads h
     CROSS JOIN LATERAL (
            SELECT m.group_key, m.id FROM pgqueue.message m
             WHERE m.queue = :queue AND m.group_key > h.group_key
             ORDER BY m.group_key, m.id LIMIT 1) n
),
scanned_heads AS MATERIALIZED (
    SELECT h.group_key, h.id FROM heads h LIMIT {batch} + 1000
),
scanned_up_to AS MATERIALIZED (
    SELECT CASE WHEN count(*) = {batch} + 1000 THEN max(s.group_key) END AS group_key FROM scanned_heads s
),
walked AS MATERIALIZED (
    SELECT w.id, w.priority, w.visible_at, w.n, w.n < {batch} + 1000 AS taken,
           w.n < {batch} + 1000
           AND ((w.claim_open AND w.claimed_at > pg_postmaster_start_time())
                OR w.id IN (SELECT unnest(CASE WHEN h.in_turn THEN h.ids[1:1] ELSE h.ids END)
                              FROM pgqueue.holding h WHERE (h.queue = :queue OR h.queue IS NULL)
                                                       AND h.opened_at > pg_postmaster_start_time() AND h.ids <> '{}')
                OR CASE WHEN w.xmax = '0'::xid OR NOT pgqueue.locker_aborted(w.xmax) THEN false
                        ELSE pgqueue.consumer_aborted(w.xmax) END) AS suspect
      FROM priorities p
     CROSS JOIN LATERAL (
            SELECT m.id, m.queue, m.priority, m.visible_at, m.xmax, m.group_key, m.previous_id,
                   m.claim_open, m.claimed_at, row_number() OVER (ORDER BY m.visible_at, m.id) AS n
              FROM pgqueue.message m
             WHERE m.queue = :queue AND m.priority = p.priority AND m.visible_at <= now()
               AND m.headers @> ANY (:filter::jsonb[]) AND m.headers <> '{}'::jsonb -- if filtered
             ORDER BY m.visible_at, m.id
             LIMIT {batch} + 1000) w
     WHERE CASE WHEN w.n = {batch} + 1000 THEN true
                WHEN (w.xmax <> '0'::xid
                      AND (w.xmax::text::bigint = ANY (ARRAY(SELECT x::text::bigint & 4294967295
                                                               FROM pg_snapshot_xip(pg_current_snapshot()) x))
                           OR ((w.xmax::text::bigint - (SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint))
                               & 4294967295) < 2147483648)) THEN false
                WHEN w.group_key <= COALESCE((SELECT group_key FROM scanned_up_to), w.group_key) THEN false
                WHEN w.group_key IS NOT NULL
                     AND (SELECT o.id FROM pgqueue.message o
                           WHERE o.queue = w.queue AND o.group_key = w.group_key AND o.id < w.id
                             AND o.id >= COALESCE(w.previous_id, 0)
                           ORDER BY o.id DESC LIMIT 1) IS NOT NULL THEN false
                ELSE pg_try_advisory_xact_lock(:namespace, w.id::bit(32)::int4) END
     LIMIT {batch}
),
scanned_head_rows AS MATERIALIZED (
    SELECT m.id, m.priority, m.visible_at,
           (m.claim_open AND m.claimed_at > pg_postmaster_start_time())
           OR m.id IN (SELECT unnest(CASE WHEN h.in_turn THEN h.ids[1:1] ELSE h.ids END)
                         FROM pgqueue.holding h WHERE (h.queue = :queue OR h.queue IS NULL)
                                                  AND h.opened_at > pg_postmaster_start_time() AND h.ids <> '{}')
           OR CASE WHEN m.xmax = '0'::xid OR NOT pgqueue.locker_aborted(m.xmax) THEN false
                   ELSE pgqueue.consumer_aborted(m.xmax) END AS suspect
      FROM pgqueue.message m
     WHERE m.id = ANY (ARRAY(SELECT id FROM scanned_heads))
       AND m.visible_at <= now() AND m.priority IN (SELECT priority FROM priorities)
       AND m.headers @> ANY (:filter::jsonb[]) AND m.headers <> '{}'::jsonb -- if filtered
       AND NOT (m.xmax <> '0'::xid
                      AND (m.xmax::text::bigint = ANY (ARRAY(SELECT x::text::bigint & 4294967295
                                                               FROM pg_snapshot_xip(pg_current_snapshot()) x))
                           OR ((m.xmax::text::bigint - (SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint))
                               & 4294967295) < 2147483648))
     ORDER BY m.priority, m.visible_at, m.id
),
taken_heads AS MATERIALIZED (
    SELECT h.id, h.suspect FROM scanned_head_rows h
     WHERE pg_try_advisory_xact_lock(:namespace, h.id::bit(32)::int4)
     LIMIT greatest(0, {batch} - (SELECT count(*) FROM walked WHERE taken))
),
taken AS (
    SELECT id, suspect FROM walked WHERE taken
    UNION ALL
    SELECT id, suspect FROM taken_heads
),
listed_by_dead AS MATERIALIZED (
    SELECT pgqueue.listed_by_the_dead(:queue, ARRAY(SELECT id FROM taken)) AS ids WHERE EXISTS (SELECT 1 FROM taken)
),
suspicion AS (
    SELECT t.id, t.suspect OR COALESCE(t.id = ANY ((SELECT ids FROM listed_by_dead)::bigint[]), false) AS suspect
      FROM taken t
),
claimed AS (
    SELECT m.id, m.queue, m.payload, m.headers, m.priority, m.visible_at, m.attempts,
           m.max_attempts, m.created_at, m.last_error
      FROM pgqueue.message m
     WHERE m.id = ANY (ARRAY(SELECT id FROM suspicion WHERE NOT suspect))
       AND (m.queue = :queue) IS TRUE AND m.visible_at <= now()
       AND NOT (m.claim_open AND m.claimed_at > pg_postmaster_start_time())
       FOR UPDATE OF m SKIP LOCKED
)
(SELECT c.id, 'claimed' AS kind,
        CASE WHEN octet_length(p.text) <= :payload_limit THEN p.text END AS payload,
        c.headers::text AS headers, c.priority, c.attempts + 1 AS attempt, c.created_at,
        COALESCE(c.max_attempts, q.max_attempts, 5) AS max_attempts,
        q.dead_letter_queue,
        (q.retention_ms IS NOT NULL OR q.deduplication_window_ms IS NOT NULL) AS keeps,
        COALESCE(q.backoff_initial_ms, 1000) AS backoff_initial_ms,
        COALESCE(q.backoff_multiplier, 2.0) AS backoff_multiplier,
        COALESCE(q.backoff_max_ms, 600000) AS backoff_max_ms,
        c.last_error,
        octet_length(p.text) AS payload_bytes,
        (extract(epoch FROM c.visible_at) * 1000000)::bigint AS visible_at_us,
        NULL::int AS groups_scanned,
        NULL::bigint AS next_due_ms
   FROM claimed c
   LEFT JOIN LATERAL (SELECT c.payload::text AS text) p ON true
   LEFT JOIN pgqueue.queue q ON q.name = c.queue
  ORDER BY c.priority, c.visible_at, c.id)
UNION ALL
SELECT id, 'suspect', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
  FROM suspicion WHERE suspect
UNION ALL
(SELECT e.id, 'window_end', NULL, NULL, e.priority, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
        (extract(epoch FROM e.visible_at) * 1000000)::bigint,
        (SELECT count(*) FROM scanned_heads)::int, NULL
   FROM walked e
  WHERE NOT e.taken
  ORDER BY e.priority LIMIT 1)
UNION ALL
SELECT NULL, 'next_due', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
       (SELECT ceil(extract(epoch FROM min(n.visible_at) - now()) * 1000)::bigint
          FROM priorities p
         CROSS JOIN LATERAL (
                SELECT m.visible_at FROM pgqueue.message m
                 WHERE m.queue = :queue AND m.priority = p.priority
                   AND m.visible_at > now() AND m.visible_at < 'infinity'
                 ORDER BY m.visible_at LIMIT 1) n)
 WHERE NOT EXISTS (SELECT 1 FROM taken);

-- name: claim_scanning_heads_after
-- claim_scanning_heads, going on from a cursor as claim_walk_after does.
WITH RECURSIVE cursor AS (SELECT :after_priority::int AS priority),
priorities AS (
    SELECT c.priority FROM cursor c
     WHERE NOT EXISTS (SELECT 1 FROM pgqueue.message WHERE queue = :queue AND priority < c.priority)
       AND NOT EXISTS (SELECT 1 FROM pgqueue.queue WHERE name = :queue AND paused)
),
heads AS (
    (SELECT m.group_key, m.id FROM pgqueue.message m
      WHERE m.queue = :queue AND m.group_key IS NOT NULL
      ORDER BY m.group_key, m.id LIMIT 1)
    UNION ALL
    SELECT n.group_key, n.id
      FROM heads h
     CROSS JOIN LATERAL (
            SELECT m.group_key, m.id FROM pgqueue.message m
             WHERE m.queue = :queue AND m.group_key > h.group_key
             ORDER BY m.group_key, m.id LIMIT 1) n
),
scanned_heads AS MATERIALIZED (
    SELECT h.group_key, h.id FROM heads h LIMIT {batch} + 1000
),
scanned_up_to AS MATERIALIZED (
    SELECT CASE WHEN count(*) = {batch} + 1000 THEN max(s.group_key) END AS group_key FROM scanned_heads s
),
walked AS MATERIALIZED (
    SELECT w.id, w.priority, w.visible_at, w.n, w.n < {batch} + 1000 AS taken,
           w.n < {batch} + 1000
           AND ((w.claim_open AND w.claimed_at > pg_postmaster_start_time())
                OR w.id IN (SELECT unnest(CASE WHEN h.in_turn THEN h.ids[1:1] ELSE h.ids END)
                              FROM pgqueue.holding h WHERE (h.queue = :queue OR h.queue IS NULL)
                                                       AND h.opened_at > pg_postmaster_start_time() AND h.ids <> '{}')
                OR CASE WHEN w.xmax = '0'::xid OR NOT pgqueue.locker_aborted(w.xmax) THEN false
                        ELSE pgqueue.consumer_aborted(w.xmax) END) AS suspect
      FROM priorities p
     CROSS JOIN LATERAL (
            SELECT m.id, m.queue, m.priority, m.visible_at, m.xmax, m.group_key, m.previous_id,
                   m.claim_open, m.claimed_at, row_number() OVER (ORDER BY m.visible_at, m.id) AS n
              FROM pgqueue.message m
             WHERE m.queue = :queue AND m.priority = p.priority AND m.visible_at <= now()
               AND m.headers @> ANY (:filter::jsonb[]) AND m.headers <> '{}'::jsonb -- if filtered
               AND (m.visible_at, m.id) > ('epoch'::timestamptz + :after_visible_at_us * interval '1 microsecond', :after_id)
             ORDER BY m.visible_at, m.id
             LIMIT {batch} + 1000) w
     WHERE CASE WHEN w.n = {batch} + 1000 THEN true
                WHEN (w.xmax <> '0'::xid
                      AND (w.xmax::text::bigint = ANY (ARRAY(SELECT x::text::bigint & 4294967295
                                                               FROM pg_snapshot_xip(pg_current_snapshot()) x))
                           OR ((w.xmax::text::bigint - (SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint))
                               & 4294967295) < 2147483648)) THEN false
                WHEN w.group_key <= COALESCE((SELECT group_key FROM scanned_up_to), w.group_key) THEN false
                WHEN w.group_key IS NOT NULL
                     AND (SELECT o.id FROM pgqueue.message o
                           WHERE o.queue = w.queue AND o.group_key = w.group_key AND o.id < w.id
                             AND o.id >= COALESCE(w.previous_id, 0)
                           ORDER BY o.id DESC LIMIT 1) IS NOT NULL THEN false
                ELSE pg_try_advisory_xact_lock(:namespace, w.id::bit(32)::int4) END
     LIMIT {batch}
),
scanned_head_rows AS MATERIALIZED (
    SELECT m.id, m.priority, m.visible_at,
           (m.claim_open AND m.claimed_at > pg_postmaster_start_time())
           OR m.id IN (SELECT unnest(CASE WHEN h.in_turn THEN h.ids[1:1] ELSE h.ids END)
                         FROM pgqueue.holding h WHERE (h.queue = :queue OR h.queue IS NULL)
                                                  AND h.opened_at > pg_postmaster_start_time() AND h.ids <> '{}')
           OR CASE WHEN m.xmax = '0'::xid OR NOT pgqueue.locker_aborted(m.xmax) THEN false
                   ELSE pgqueue.consumer_aborted(m.xmax) END AS suspect
      FROM pgqueue.message m
     WHERE m.id = ANY (ARRAY(SELECT id FROM scanned_heads))
       AND m.visible_at <= now() AND m.priority IN (SELECT priority FROM priorities)
       AND m.headers @> ANY (:filter::jsonb[]) AND m.headers <> '{}'::jsonb -- if filtered
       AND NOT (m.xmax <> '0'::xid
                      AND (m.xmax::text::bigint = ANY (ARRAY(SELECT x::text::bigint & 4294967295
                                                               FROM pg_snapshot_xip(pg_current_snapshot()) x))
                           OR ((m.xmax::text::bigint - (SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint))
                               & 4294967295) < 2147483648))
     ORDER BY m.priority, m.visible_at, m.id
),
taken_heads AS MATERIALIZED (
    SELECT h.id, h.suspect FROM scanned_head_rows h
     WHERE pg_try_advisory_xact_lock(:namespace, h.id::bit(32)::int4)
     LIMIT greatest(0, {batch} - (SELECT count(*) FROM walked WHERE taken))
),
taken AS (
    SELECT id, suspect FROM walked WHERE taken
    UNION ALL
    SELECT id, suspect FROM taken_heads
),
listed_by_dead AS MATERIALIZED (
    SELECT pgqueue.listed_by_the_dead(:queue, ARRAY(SELECT id FROM taken)) AS ids WHERE EXISTS (SELECT 1 FROM taken)
),
suspicion AS (
    SELECT t.id, t.suspect OR COALESCE(t.id = ANY ((SELECT ids FROM listed_by_dead)::bigint[]), false) AS suspect
      FROM taken t
),
claimed AS (
    SELECT m.id, m.queue, m.payload, m.headers, m.priority, m.visible_at, m.attempts,
           m.max_attempts, m.created_at, m.last_error
      FROM pgqueue.message m
     WHERE m.id = ANY (ARRAY(SELECT id FROM suspicion WHERE NOT suspect))
       AND (m.queue = :queue) IS TRUE AND m.visible_at <= now()
       AND NOT (m.claim_open AND m.claimed_at > pg_postmaster_start_time())
       FOR UPDATE OF m SKIP LOCKED
)
(SELECT c.id, 'claimed' AS kind,
        CASE WHEN octet_length(p.text) <= :payload_limit THEN p.text END AS payload,
        c.headers::text AS headers, c.priority, c.attempts + 1 AS attempt, c.created_at,
        COALESCE(c.max_attempts, q.max_attempts, 5) AS max_attempts,
        q.dead_letter_queue,
        (q.retention_ms IS NOT NULL OR q.deduplication_window_ms IS NOT NULL) AS keeps,
        COALESCE(q.backoff_initial_ms, 1000) AS backoff_initial_ms,
        COALESCE(q.backoff_multiplier, 2.0) AS backoff_multiplier,
        COALESCE(q.backoff_max_ms, 600000) AS backoff_max_ms,
        c.last_error,
        octet_length(p.text) AS payload_bytes,
        (extract(epoch FROM c.visible_at) * 1000000)::bigint AS visible_at_us,
        NULL::int AS groups_scanned,
        NULL::bigint AS next_due_ms
   FROM claimed c
   LEFT JOIN LATERAL (SELECT c.payload::text AS text) p ON true
   LEFT JOIN pgqueue.queue q ON q.name = c.queue
  ORDER BY c.priority, c.visible_at, c.id)
UNION ALL
SELECT id, 'suspect', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
  FROM suspicion WHERE suspect
UNION ALL
(SELECT e.id, 'window_end', NULL, NULL, e.priority, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
        (extract(epoch FROM e.visible_at) * 1000000)::bigint,
        (SELECT count(*) FROM scanned_heads)::int, NULL
   FROM walked e
  WHERE NOT e.taken
  ORDER BY e.priority LIMIT 1)
UNION ALL
SELECT NULL, 'next_due', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
       (SELECT ceil(extract(epoch FROM min(n.visible_at) - now()) * 1000)::bigint
          FROM priorities p
         CROSS JOIN LATERAL (
                SELECT m.visible_at FROM pgqueue.message m
                 WHERE m.queue = :queue AND m.priority = p.priority
                   AND m.visible_at > now() AND m.visible_at < 'infinity'
                 ORDER BY m.visible_at LIMIT 1) n)
 WHERE NOT EXISTS (SELECT 1 FROM taken);

-- name: ack
-- Deletes messages in the handlers' transaction, which holds their locks.
DELETE FROM pgqueue.message WHERE id = ANY(:ids) AND (queue = :queue) IS TRUE RETURNING id;

-- name: ack_keeping
-- As ack, for messages of a queue with a retention or a deduplication window, as session.sql's
-- ack_keeping: archived with this attempt counted (attempts holds the failed ones), their keys kept.
WITH acked AS (
    DELETE FROM pgqueue.message WHERE id = ANY(:ids) AND (queue = :queue) IS TRUE RETURNING id
),
archived AS (
    INSERT INTO pgqueue.archive (id, queue, outcome, payload, headers, priority, attempts, max_attempts, group_key,
                                 deduplication_key, last_error, created_at, expires_at)
    SELECT m.id, m.queue, 'acked', m.payload, m.headers, m.priority, m.attempts + 1, m.max_attempts, m.group_key,
           m.deduplication_key, m.last_error, m.created_at,
           now() + (SELECT q.retention_ms FROM pgqueue.queue q WHERE q.name = :queue) * interval '1 millisecond'
      FROM pgqueue.message m
     WHERE (SELECT q.retention_ms FROM pgqueue.queue q WHERE q.name = :queue) IS NOT NULL
       AND m.id = ANY (ARRAY(SELECT id FROM acked))
),
kept AS (
    SELECT pgqueue.keep_keys(array_agg(m.queue::text), array_agg(m.deduplication_key), array_agg(m.id)) AS keys
      FROM pgqueue.message m
     WHERE (SELECT q.deduplication_window_ms FROM pgqueue.queue q WHERE q.name = :queue) IS NOT NULL
       AND m.id = ANY (ARRAY(SELECT id FROM acked)) AND m.deduplication_key IS NOT NULL
    HAVING count(*) > 0
)
SELECT id FROM acked WHERE (SELECT count(*) FROM kept) >= 0;

-- name: retry
-- Stores each failed attempt's number (:attempts), makes the messages visible again after their
-- delays, records the errors, and wakes the queue's pollers, as session.sql's retry.
WITH r AS (SELECT * FROM unnest(:ids::bigint[], :attempts::int[], :delays_ms::bigint[], :errors::text[])
                         AS r(id, attempts, delay_ms, error)),
retried AS (
    UPDATE pgqueue.message m
       SET attempts = r.attempts, visible_at = now() + r.delay_ms * interval '1 millisecond',
           last_error = COALESCE(r.error, m.last_error), claim_open = false
      FROM r
     WHERE m.id = ANY (ARRAY(SELECT id FROM r)) AND m.id = r.id
    RETURNING m.id, m.queue
)
SELECT id, pg_notify(:channel, queue) FROM retried;

-- name: dead_letter
-- As session.sql's dead_letter (archive and kept keys included), in the handlers' transaction,
-- with the failed attempts' numbers.
WITH n AS (SELECT * FROM unnest(:ids::bigint[], :attempts::int[], :dead_letter_queues::text[], :errors::text[])
                         AS n(id, attempts, dlq, error)),
moved AS (
    UPDATE pgqueue.message m
       SET queue = CASE WHEN d.park THEN m.queue ELSE d.dlq END,
           attempts = CASE WHEN d.park THEN d.attempts ELSE 0 END,
           visible_at = CASE WHEN d.park THEN 'infinity' ELSE now() END,
           last_error = d.error, claim_open = false,
           deduplication_key = CASE WHEN d.park THEN m.deduplication_key END,
           group_key = CASE WHEN d.park THEN m.group_key END,
           headers = CASE WHEN d.park THEN m.headers
                          ELSE m.headers || jsonb_strip_nulls(jsonb_build_object('pgqueue-group', m.group_key))
                               || jsonb_build_object('pgqueue-dead-lettered-from', m.queue,
                                                     'pgqueue-dead-lettered-attempts', d.attempts::text) END
      FROM (SELECT n.id, n.attempts, n.dlq, n.error,
                   jsonb_exists(o.headers, 'pgqueue-dead-lettered-from') OR n.dlq = o.queue
              FROM n JOIN pgqueue.message o ON o.id = n.id
             WHERE o.id = ANY (ARRAY(SELECT id FROM n))) AS d(id, attempts, dlq, error, park)
     WHERE m.id = ANY (ARRAY(SELECT id FROM n)) AND m.id = d.id
    RETURNING m.id, m.queue, d.park
),
archived AS (
    INSERT INTO pgqueue.archive (id, queue, outcome, payload, headers, priority, attempts, max_attempts, group_key,
                                 deduplication_key, last_error, created_at, expires_at)
    SELECT o.id, o.queue, 'dead-lettered', o.payload, o.headers, o.priority, n.attempts, o.max_attempts,
           o.group_key, o.deduplication_key, n.error, o.created_at, now() + q.retention_ms * interval '1 millisecond'
      FROM pgqueue.message o
      JOIN n ON n.id = o.id
      JOIN pgqueue.queue q ON q.name = o.queue AND q.retention_ms IS NOT NULL
     WHERE o.id = ANY (ARRAY(SELECT id FROM moved WHERE NOT park))
),
kept AS (
    SELECT pgqueue.keep_keys(array_agg(o.queue::text), array_agg(o.deduplication_key), array_agg(o.id)) AS keys
      FROM pgqueue.message o
      JOIN pgqueue.queue q ON q.name = o.queue AND q.deduplication_window_ms IS NOT NULL
     WHERE o.id = ANY (ARRAY(SELECT id FROM moved WHERE NOT park)) AND o.deduplication_key IS NOT NULL
    HAVING count(*) > 0
)
SELECT id, CASE WHEN NOT park THEN pg_notify(:channel, queue) END FROM moved WHERE (SELECT count(*) FROM kept) >= 0;

-- name: lock_claimed
-- In the transaction that runs a suspect, whose advisory lock another session of the same poller
-- holds: the row lock fences it from consumers that skip locked rows. A keyed message of a queue
-- with a max_in_flight_per_key (V25) also takes one of its key's slots for the transaction, as the
-- fair claims do: slotted is false when none is free (the caller ends the transaction and tries
-- again later).
SELECT m.id,
       CASE WHEN m.concurrency_key IS NULL OR q.max_in_flight_per_key IS NULL THEN true
            ELSE pgqueue.take_slot(:namespace, :queue, m.concurrency_key, q.max_in_flight_per_key, true) IS NOT NULL
       END AS slotted
  FROM pgqueue.message m
  LEFT JOIN pgqueue.queue q ON q.name = m.queue
 WHERE m.id = :id AND (m.queue = :queue) IS TRUE
   FOR UPDATE OF m;
