-- The statements of a consumer session (session mode, receive, and the suspects of transactional
-- mode): a claim takes session-level advisory locks, each held until the message is acked,
-- retried, dead-lettered or released. The lock key of a message is (namespace, id::bit(32)::int4):
-- the two-int4 form, whose key space is apart from the single-bigint locks applications usually
-- take, with the id folded to its low 32 bits. A statement that finds messages by id tests their
-- queue as (queue = :queue) IS TRUE: the planner cannot make that an index condition, so it looks the
-- ids up by primary key rather than walking the claim index over the whole queue. The fair claims
-- test the visibility of the rows they found by id the same way: PostgreSQL 14 planned their
-- visible_at <= now() as the condition of a walk of the whole claim index.
--
-- Words used in the comments. A suspect is a message whose consumer died holding it: its attempt
-- was not written, and the claim that finds it counts that attempt. The holding table lists, per
-- session, the messages it holds, so that a session that dies leaves a record of what it had
-- (V12, V18, V19). HELD_OPEN(m) is (m.claim_open AND m.claimed_at > pg_postmaster_start_time()):
-- a session claimed m alone as a suspect and has not completed it since the server last started.
-- HELD_BY_THE_DEAD(m) is HELD_OPEN(m) or m listed by the holding row of a session that died (of a
-- row whose messages are handed out in turn, only the first counts); neither counts from before
-- the server last started, since that restart ended every session at once.

-- name: namespace
-- The lock namespace stored when the schema was created (by default the message table's oid, so
-- two pgqueue schemas in one database never share keys).
SELECT lock_namespace FROM pgqueue.setting;

-- name: open_session
-- A consumer session's holding row, with its key and backend pid. First forgets the rows nobody
-- needs any more, whatever role wrote them (forget_ended_sessions, V19).
INSERT INTO pgqueue.holding (pid, queue) SELECT pg_backend_pid(), '' FROM pgqueue.forget_ended_sessions()
RETURNING session, pid;

-- name: close_session
-- Deletes the holding row of a session that holds nothing and gives the connection its default
-- isolation back.
WITH gone AS (DELETE FROM pgqueue.holding WHERE session = :session)
SELECT set_config('default_transaction_isolation', :default_isolation, false);

-- name: backend_pid
SELECT pg_backend_pid() AS pid;

-- name: unlock_all
-- After a claim that failed for another reason than a lost connection: advisory locks are not
-- undone with the statement that took them, and the session held nothing before the claim.
SELECT pg_advisory_unlock_all();

-- name: claim_walk
-- Claims up to {batch} messages from the head of :queue.
--
-- priorities: a loose index scan over the queue's priorities, lowest first; a paused queue has
-- none, so nothing is claimed and no next due time is given.
--
-- locked: walks the claim index priority by priority, tests queue and visibility before the
-- lock, and tries the lock one candidate at a time outside the ordered subquery: the LIMIT stops
-- the walk, so only the rows returned are locked (ORDER BY next to the lock would sort first and
-- lock every row the sort visits). A message of a FIFO group is a candidate only as its group's
-- head: no older message of its group is in the queue, looked for backwards from the row and no
-- lower than its previous_id (V15). The window ({batch} + 1000 rows) counts the rows that pass these
-- tests, so a long run of one group's messages does not hide the other groups' heads; the walk
-- stops after ten windows' worth all the same (claim_scanning_heads serves queues whose heads are
-- scarce). Without :may_take_suspects, the walk leaves out what HELD_BY_THE_DEAD shows.
--
-- listed_by_dead, suspicion, to_claim: a locked row held by a consumer that died is a suspect:
-- its claim is open on the scan's snapshot, or a dead session lists it on a snapshot taken after
-- the locks (the scan's can predate the holder's claim and death). If there are any, they are
-- claimed without the other rows and handed out in turn (in_turn): the session completes each
-- before it hands over the next, and its holding row lists them in that order, so that if it dies
-- only the one a handler had is counted again.
--
-- claimed_unchanged, claimed_rewritten: the re-check. The scan's snapshot can still show a row
-- that another consumer completed after it was taken (the completion released the key), so the
-- lock succeeds on it. Such a completion wrote the row, so its xmax is no longer 0 when read again
-- here, after every lock. A row whose xmax is 0 is claimed as it is, nothing written; every other
-- row goes through an UPDATE, which waits for the writer and re-evaluates the WHERE clause on the
-- newest version (EvalPlanQual), skipping a row gone, moved or no longer visible. A dead holder's
-- lost attempt is counted there: a suspect whose row is still the version the scan saw, a row a
-- dead session lists, or one whose newest version has its claim open. Row-level security lets a
-- role that may only send read the messages (V10); the UPDATE policy keeps it from claiming them,
-- so claimed_unchanged, which writes nothing, asks the same question once per claim.
--
-- taken_from_the_dead, holding_updated: suspects leave the dead sessions' holding rows (unlist,
-- V19, which checks that the role may consume them); the claimed rows are listed in this
-- session's row in the order they are returned. The list is written only when it changes.
--
-- The result: one row per locked row, in the order handed out. kind 'claimed' (with the message
-- and its queue's policy; a payload above :payload_limit is not sent, its size says why),
-- 'gone' (chosen, found gone by the re-check) or 'left' (not chosen because suspects were); the
-- others are unlocked at once. place_* is where each chosen row is in the claim index: the
-- poller's next claim goes on after the last. One row of kind 'next_due' says in how many
-- milliseconds the queue's next delayed message is due (null: none is) when nothing could be
-- locked, or when the claim came back short with nothing that a claim right after it could find:
-- no row of a FIFO group (its next message becomes the head once this one is done), none gone or
-- left, no suspect. What is sent or retried after the statement notifies; so a poller that is
-- handed such a short batch waits once it is done, instead of claiming again for nothing.
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
locked AS (
    SELECT c.id, c.suspect, c.seen, c.priority, c.visible_at, c.grouped
      FROM priorities p
     CROSS JOIN LATERAL (
            SELECT m.id, m.suspect, m.seen, m.priority, m.visible_at, m.group_key IS NOT NULL AS grouped
              FROM (SELECT m.id, m.queue, m.group_key, m.previous_id,
                           (m.claim_open AND m.claimed_at > pg_postmaster_start_time()) AS suspect,
                           m.xmin AS seen, m.priority, m.visible_at
                      FROM pgqueue.message m
                     WHERE m.queue = :queue AND m.priority = p.priority AND m.visible_at <= now()
                       AND (:may_take_suspects OR NOT ((m.claim_open AND m.claimed_at > pg_postmaster_start_time())
                            OR m.id IN (SELECT unnest(CASE WHEN h.in_turn THEN h.ids[1:1] ELSE h.ids END)
                                          FROM pgqueue.holding h WHERE (h.queue = :queue OR h.queue IS NULL)
                                                                   AND h.opened_at > pg_postmaster_start_time() AND h.ids <> '{}')))
                       AND m.headers @> ANY (:filter::jsonb[]) AND m.headers <> '{}'::jsonb -- if filtered
                     ORDER BY m.visible_at, m.id
                     LIMIT 10 * ({batch} + 1000)) m
             WHERE m.group_key IS NULL
                OR (SELECT o.id FROM pgqueue.message o
                     WHERE o.queue = m.queue AND o.group_key = m.group_key AND o.id < m.id
                       AND o.id >= COALESCE(m.previous_id, 0)
                     ORDER BY o.id DESC LIMIT 1) IS NULL
             LIMIT {batch} + 1000) c
     WHERE pg_try_advisory_lock(:namespace, c.id::bit(32)::int4)
     LIMIT {batch}
),
listed_by_dead AS MATERIALIZED (
    SELECT pgqueue.listed_by_the_dead(:queue, ARRAY(SELECT id FROM locked)) AS ids WHERE EXISTS (SELECT 1 FROM locked)
),
suspicion AS (
    SELECT l.id, l.seen, l.suspect, COALESCE(l.id = ANY ((SELECT ids FROM listed_by_dead)::bigint[]), false) AS listed
      FROM locked l
),
to_claim AS (
    SELECT id, false AS suspect, false AS listed, seen FROM suspicion
     WHERE NOT EXISTS (SELECT 1 FROM suspicion WHERE suspect OR listed)
    UNION ALL
    SELECT id, true, listed, seen FROM suspicion WHERE suspect OR listed
),
claimed_unchanged AS (
    SELECT m.id, m.queue, m.payload, m.headers, m.priority, m.visible_at, m.attempts,
           m.max_attempts, m.created_at, m.last_error, false AS suspect
      FROM pgqueue.message m
     WHERE m.id = ANY (ARRAY(SELECT id FROM to_claim WHERE NOT suspect))
       AND m.xmax = '0'::xid AND (m.queue = :queue) IS TRUE AND m.visible_at <= now()
       AND (SELECT NOT row_security_active('pgqueue.message') OR pgqueue.queue_allowed(:queue, true, current_user))
),
claimed_rewritten AS (
    UPDATE pgqueue.message m
       SET attempts = m.attempts + CASE WHEN (l.suspect AND m.xmin = l.seen) OR l.listed
                                             OR (m.claim_open AND m.claimed_at > pg_postmaster_start_time())
                                        THEN 1 ELSE 0 END,
           claim_open = false, claimed_at = now()
      FROM to_claim l
     WHERE m.id = ANY (ARRAY(SELECT id FROM to_claim WHERE id NOT IN (SELECT id FROM claimed_unchanged)))
       AND m.id = l.id AND (m.queue = :queue) IS TRUE AND m.visible_at <= now()
    RETURNING m.id, m.queue, m.payload, m.headers, m.priority, m.visible_at, m.attempts,
              m.max_attempts, m.created_at, m.last_error, l.suspect
),
claimed AS (
    SELECT * FROM claimed_unchanged UNION ALL SELECT * FROM claimed_rewritten
),
taken_from_the_dead AS MATERIALIZED (
    SELECT CASE WHEN EXISTS (SELECT 1 FROM claimed WHERE suspect)
                THEN pgqueue.unlist(ARRAY(SELECT id FROM claimed WHERE suspect), current_user) END AS changed
),
holding_updated AS (
    UPDATE pgqueue.holding h
       SET ids = ARRAY(SELECT id FROM claimed ORDER BY priority, visible_at, id),
           queue = :queue,
           in_turn = EXISTS (SELECT 1 FROM claimed WHERE suspect)
     WHERE h.session = :session AND (cardinality(h.ids) > 0 OR EXISTS (SELECT 1 FROM claimed))
)
(SELECT l.id,
        CASE WHEN c.id IS NOT NULL THEN 'claimed' WHEN l.id IN (SELECT id FROM to_claim) THEN 'gone' ELSE 'left' END AS kind,
        CASE WHEN c.id IS NULL THEN pg_advisory_unlock(:namespace, l.id::bit(32)::int4) END AS unlocked,
        c.suspect AS in_turn,
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
        CASE WHEN l.id IN (SELECT id FROM to_claim) THEN l.priority END AS place_priority,
        CASE WHEN l.id IN (SELECT id FROM to_claim)
             THEN (extract(epoch FROM l.visible_at) * 1000000)::bigint END AS place_visible_at_us,
        NULL::bigint AS next_due_ms
   FROM locked l
   LEFT JOIN claimed c ON c.id = l.id
  CROSS JOIN taken_from_the_dead
   LEFT JOIN LATERAL (SELECT c.payload::text AS text) p ON true
   LEFT JOIN pgqueue.queue q ON q.name = c.queue
  ORDER BY c.priority, c.visible_at, l.id)
UNION ALL
SELECT NULL, 'next_due', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
       NULL, NULL,
       (SELECT ceil(extract(epoch FROM min(n.visible_at) - now()) * 1000)::bigint
          FROM priorities p
         CROSS JOIN LATERAL (
                SELECT m.visible_at FROM pgqueue.message m
                 WHERE m.queue = :queue AND m.priority = p.priority
                   AND m.visible_at > now() AND m.visible_at < 'infinity'
                 ORDER BY m.visible_at LIMIT 1) n)
 WHERE NOT EXISTS (SELECT 1 FROM locked)
    OR ((SELECT count(*) FROM claimed) < {batch}
        AND NOT EXISTS (SELECT 1 FROM locked WHERE grouped OR id NOT IN (SELECT id FROM claimed))
        AND NOT EXISTS (SELECT 1 FROM claimed WHERE suspect));

-- name: concurrency_key_of
-- The header whose value is the concurrency key of :queue's messages (V25), and how many messages of
-- one key may be in flight at once, and whether each key has a rate limit of its own (V26); no row,
-- or null, for a queue without one: its claims are claim_walk's.
SELECT concurrency_key, max_in_flight_per_key, rate_limit_per_key_permits IS NOT NULL AS rate_limited_per_key
  FROM pgqueue.queue WHERE name = :queue;

-- name: release_slots
-- Releases the per-key slots (V25) a claim_fair of this session took, once its messages are done.
SELECT pgqueue.release_slots(:lock_keys::bigint[]) AS released;

-- name: claim_fair
-- claim_walk for a queue whose definition names a concurrency key (V25): claims round robin across
-- keys, so that one key's backlog does not hold back the others' messages. From the head, or, with
-- a cursor (:after_priority, :after_visible_at_us, :after_id: where this poller's last full claim
-- ended, as claim_walk_after takes it), from there. The cursor stands while the queue's lowest
-- priority is not below its own, asked with one index descent: as a NOT EXISTS of a lower priority
-- beside the cursor (a CTE read more than once, so not folded into the statement), the generic
-- plan read every entry of the queue on every claim.
--
-- keys: up to {batch} keys that have messages, one backward descent of the concurrency index per
-- key, in descending key order from the first key before :after_key (the last key the poller's
-- previous claim served; "" for none), then from the last key down again. Backward, because each
-- key's range begins with the dead entries of its messages acked since the last vacuum and ends
-- with its newest messages. walked: the batch but for one row per further key (at most half the
-- batch: reserved), walked as claim_walk or claim_walk_after walks it, so that a key with a
-- backlog still fills the batches. heads: for each key the walk did not reach, its first message
-- a claim may take (visible, not held, its group's head) after the cursor, locked one key at a
-- time, until the batch is full. A key whose messages are all held or not yet visible gives none.
-- Heads are looked for only where the walk did not go: the concurrency index's entries of the
-- messages the walks take die unseen by the walks, so a head of the walked key would step over
-- every one acked since the cursor. Heads descend the concurrency index (the row comparison names
-- its columns, so that no plan walks the claim index instead, testing each row's key) past the
-- cursor in (priority, visible_at, id). Messages without a key are reached by the walk only.
-- Everything after locked is claim_walk's. Rows say the place of walked rows only, so that the
-- poller's cursor goes on after the walk, not after a key's head far ahead; each row says the last
-- key the heads served (next_key), where the poller's next fair claim goes on, and whether the walk
-- took all it could (walk_full: the claim counts as full, as one that filled its batch). A queue
-- with a max_in_flight_per_key (V25) has each keyed message take one of its key's slots as well,
-- a session lock (take_slot), after the message's own lock, which is given back at once when no
-- slot is free; every row lists the slots' lock keys (slot_locks, ",k1,k2,"), which the session
-- releases (release_slots) once the claim's messages are done. A queue limited per key (V26) has
-- each keyed message take one of its key's tokens granted for this claim (:grants, of
-- take_key_tokens; null without such a limit) with its slot (take_key_turn), and only keys with
-- tokens are walked to or given heads; every row says the tokens left of each key (grants_left, a
-- JSON object), which the poller gives back.
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
    SELECT c.id, c.suspect, c.seen, c.priority, c.visible_at, c.concurrency_key
      FROM priorities p
     CROSS JOIN cursor w
     CROSS JOIN LATERAL (
            SELECT m.id, m.suspect, m.seen, m.priority, m.visible_at, m.concurrency_key
              FROM (SELECT m.id, m.queue, m.group_key, m.previous_id, m.concurrency_key,
                           (m.claim_open AND m.claimed_at > pg_postmaster_start_time()) AS suspect,
                           m.xmin AS seen, m.priority, m.visible_at
                      FROM pgqueue.message m
                     WHERE m.queue = :queue AND m.priority = p.priority AND m.visible_at <= now()
                       AND (:may_take_suspects OR NOT ((m.claim_open AND m.claimed_at > pg_postmaster_start_time())
                            OR m.id IN (SELECT unnest(CASE WHEN h.in_turn THEN h.ids[1:1] ELSE h.ids END)
                                          FROM pgqueue.holding h WHERE (h.queue = :queue OR h.queue IS NULL)
                                                                   AND h.opened_at > pg_postmaster_start_time() AND h.ids <> '{}')))
                       AND m.headers @> ANY (:filter::jsonb[]) AND m.headers <> '{}'::jsonb -- if filtered
                       AND (m.visible_at, m.id) > (w.visible_at, w.id)
                     ORDER BY m.visible_at, m.id
                     LIMIT 10 * ({batch} + 1000)) m
             WHERE m.group_key IS NULL
                OR (SELECT o.id FROM pgqueue.message o
                     WHERE o.queue = m.queue AND o.group_key = m.group_key AND o.id < m.id
                       AND o.id >= COALESCE(m.previous_id, 0)
                     ORDER BY o.id DESC LIMIT 1) IS NULL
             LIMIT {batch} + 1000) c
     WHERE CASE WHEN c.concurrency_key IS NOT NULL AND (SELECT g FROM key_grants) IS NOT NULL
                     AND (COALESCE(((SELECT g FROM key_grants) -> 'left' ->> c.concurrency_key)::int, 0) <= 0
                          OR pgqueue.key_tokens_left(c.concurrency_key, (SELECT g FROM key_grants)) <= 0)
                THEN false -- before its lock
                ELSE pg_try_advisory_lock(:namespace, c.id::bit(32)::int4)
                     AND (c.concurrency_key IS NULL OR ((SELECT per_key FROM slots) IS NULL AND (SELECT g FROM key_grants) IS NULL)
                          OR pgqueue.take_key_turn(:namespace, :queue, c.concurrency_key, (SELECT per_key FROM slots),
                                                   false, (SELECT g FROM key_grants))
                          OR pg_advisory_unlock(:namespace, c.id::bit(32)::int4) IS NULL) END
     LIMIT {batch} - (SELECT n FROM reserved)
),
heads AS MATERIALIZED (
    SELECT h.id, h.suspect, h.seen, h.priority, h.visible_at, k.key, k.part
      FROM keys k
     CROSS JOIN cursor c
     CROSS JOIN LATERAL (
            SELECT m.id, (m.claim_open AND m.claimed_at > pg_postmaster_start_time()) AS suspect, m.xmin AS seen,
                   m.priority, m.visible_at
              FROM pgqueue.message m
             WHERE m.queue = :queue AND m.concurrency_key = k.key AND m.visible_at <= now()
               AND (m.concurrency_key, m.priority, m.visible_at, m.id)
                   > (k.key, COALESCE(c.priority, -2147483648), c.visible_at, c.id) -- the concurrency index's columns
               AND (:may_take_suspects OR NOT ((m.claim_open AND m.claimed_at > pg_postmaster_start_time())
                    OR m.id IN (SELECT unnest(CASE WHEN h.in_turn THEN h.ids[1:1] ELSE h.ids END)
                                  FROM pgqueue.holding h WHERE (h.queue = :queue OR h.queue IS NULL)
                                                           AND h.opened_at > pg_postmaster_start_time() AND h.ids <> '{}')))
               AND m.headers @> ANY (:filter::jsonb[]) AND m.headers <> '{}'::jsonb -- if filtered
               AND (m.group_key IS NULL
                    OR (SELECT o.id FROM pgqueue.message o
                         WHERE o.queue = m.queue AND o.group_key = m.group_key AND o.id < m.id
                           AND o.id >= COALESCE(m.previous_id, 0)
                         ORDER BY o.id DESC LIMIT 1) IS NULL)
               AND pg_try_advisory_lock(:namespace, m.id::bit(32)::int4)
               AND (((SELECT per_key FROM slots) IS NULL AND (SELECT g FROM key_grants) IS NULL)
                    OR pgqueue.take_key_turn(:namespace, :queue, m.concurrency_key, (SELECT per_key FROM slots), false,
                                             (SELECT g FROM key_grants))
                    OR pg_advisory_unlock(:namespace, m.id::bit(32)::int4) IS NULL)
             ORDER BY m.priority, m.visible_at, m.id
             LIMIT 1) h
     WHERE k.key NOT IN (SELECT concurrency_key FROM walked WHERE concurrency_key IS NOT NULL)
       AND ((SELECT g FROM key_grants) IS NULL OR ((SELECT g FROM key_grants) -> 'left' ->> k.key)::int > 0)
     LIMIT {batch} - (SELECT count(*) FROM walked)
),
locked AS (
    SELECT id, suspect, seen, priority, visible_at, true AS head FROM heads
    UNION ALL
    SELECT id, suspect, seen, priority, visible_at, false FROM walked
),
slots_taken AS MATERIALIZED (
    SELECT CASE WHEN (SELECT count(*) FROM locked) >= 0 THEN current_setting('pgqueue_claim.slots', true) END AS lock_keys
),
grants_left AS MATERIALIZED (
    SELECT CASE WHEN (SELECT count(*) FROM locked) >= 0
                THEN (CASE WHEN g.state -> 'claim' = (SELECT g FROM key_grants) -> 'claim' THEN g.state ELSE (SELECT g FROM key_grants) END
                      -> 'left')::text END AS left_over
      FROM (SELECT NULLIF(current_setting('pgqueue_claim.grants', true), '')::jsonb AS state) g
),
listed_by_dead AS MATERIALIZED (
    SELECT pgqueue.listed_by_the_dead(:queue, ARRAY(SELECT id FROM locked)) AS ids WHERE EXISTS (SELECT 1 FROM locked)
),
suspicion AS (
    SELECT l.id, l.seen, l.suspect, COALESCE(l.id = ANY ((SELECT ids FROM listed_by_dead)::bigint[]), false) AS listed
      FROM locked l
),
to_claim AS (
    SELECT id, false AS suspect, false AS listed, seen FROM suspicion
     WHERE NOT EXISTS (SELECT 1 FROM suspicion WHERE suspect OR listed)
    UNION ALL
    SELECT id, true, listed, seen FROM suspicion WHERE suspect OR listed
),
claimed_unchanged AS (
    SELECT m.id, m.queue, m.payload, m.headers, m.priority, m.visible_at, m.attempts,
           m.max_attempts, m.created_at, m.last_error, false AS suspect
      FROM pgqueue.message m
     WHERE m.id = ANY (ARRAY(SELECT id FROM to_claim WHERE NOT suspect))
       AND m.xmax = '0'::xid AND (m.queue = :queue) IS TRUE AND (m.visible_at <= now()) IS TRUE
       AND (SELECT NOT row_security_active('pgqueue.message') OR pgqueue.queue_allowed(:queue, true, current_user))
),
claimed_rewritten AS (
    UPDATE pgqueue.message m
       SET attempts = m.attempts + CASE WHEN (l.suspect AND m.xmin = l.seen) OR l.listed
                                             OR (m.claim_open AND m.claimed_at > pg_postmaster_start_time())
                                        THEN 1 ELSE 0 END,
           claim_open = false, claimed_at = now()
      FROM to_claim l
     WHERE m.id = ANY (ARRAY(SELECT id FROM to_claim WHERE id NOT IN (SELECT id FROM claimed_unchanged)))
       AND m.id = l.id AND (m.queue = :queue) IS TRUE AND (m.visible_at <= now()) IS TRUE
    RETURNING m.id, m.queue, m.payload, m.headers, m.priority, m.visible_at, m.attempts,
              m.max_attempts, m.created_at, m.last_error, l.suspect
),
claimed AS (
    SELECT * FROM claimed_unchanged UNION ALL SELECT * FROM claimed_rewritten
),
taken_from_the_dead AS MATERIALIZED (
    SELECT CASE WHEN EXISTS (SELECT 1 FROM claimed WHERE suspect)
                THEN pgqueue.unlist(ARRAY(SELECT id FROM claimed WHERE suspect), current_user) END AS changed
),
holding_updated AS (
    UPDATE pgqueue.holding h
       SET ids = ARRAY(SELECT id FROM claimed ORDER BY priority, visible_at, id),
           queue = :queue,
           in_turn = EXISTS (SELECT 1 FROM claimed WHERE suspect)
     WHERE h.session = :session AND (cardinality(h.ids) > 0 OR EXISTS (SELECT 1 FROM claimed))
)
(SELECT l.id,
        CASE WHEN c.id IS NOT NULL THEN 'claimed' WHEN l.id IN (SELECT id FROM to_claim) THEN 'gone' ELSE 'left' END AS kind,
        CASE WHEN c.id IS NULL THEN pg_advisory_unlock(:namespace, l.id::bit(32)::int4) END AS unlocked,
        c.suspect AS in_turn,
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
        CASE WHEN l.id IN (SELECT id FROM to_claim) AND NOT l.head THEN l.priority END AS place_priority,
        CASE WHEN l.id IN (SELECT id FROM to_claim) AND NOT l.head
             THEN (extract(epoch FROM l.visible_at) * 1000000)::bigint END AS place_visible_at_us,
        NULL::bigint AS next_due_ms,
        (SELECT h.key FROM heads h ORDER BY h.part DESC, h.key LIMIT 1) AS next_key,
        (SELECT count(*) FROM walked) = {batch} - (SELECT n FROM reserved) AS walk_full,
        (SELECT lock_keys FROM slots_taken) AS slot_locks,
        (SELECT left_over FROM grants_left) AS grants_left
   FROM locked l
   LEFT JOIN claimed c ON c.id = l.id
  CROSS JOIN taken_from_the_dead
   LEFT JOIN LATERAL (SELECT c.payload::text AS text) p ON true
   LEFT JOIN pgqueue.queue q ON q.name = c.queue
  ORDER BY c.priority, c.visible_at, l.id)
UNION ALL
SELECT NULL, 'next_due', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
       NULL, NULL,
       (SELECT ceil(extract(epoch FROM min(n.visible_at) - now()) * 1000)::bigint
          FROM priorities p
         CROSS JOIN LATERAL (
                SELECT m.visible_at FROM pgqueue.message m
                 WHERE m.queue = :queue AND m.priority = p.priority
                   AND m.visible_at > now() AND m.visible_at < 'infinity'
                 ORDER BY m.visible_at LIMIT 1) n),
       NULL, NULL, NULL, (SELECT left_over FROM grants_left)
 WHERE NOT EXISTS (SELECT 1 FROM locked);


-- name: claim_walk_after
-- claim_walk, going on from where this poller's last full claim ended: in that claim's last
-- priority (:after_priority) and after its last row in the claim index (:after_visible_at_us,
-- :after_id), so the scan descends to it rather than stepping over every entry before it (mostly
-- the dead entries of messages acked since the last vacuum). It claims nothing when the queue
-- holds a message of a lower priority, visible or not: the caller then claims from the head.
WITH RECURSIVE cursor AS (SELECT :after_priority::int AS priority),
priorities AS (
    SELECT c.priority FROM cursor c
     WHERE NOT EXISTS (SELECT 1 FROM pgqueue.message WHERE queue = :queue AND priority < c.priority)
       AND NOT EXISTS (SELECT 1 FROM pgqueue.queue WHERE name = :queue AND paused)
),
locked AS (
    SELECT c.id, c.suspect, c.seen, c.priority, c.visible_at
      FROM priorities p
     CROSS JOIN LATERAL (
            SELECT m.id, m.suspect, m.seen, m.priority, m.visible_at
              FROM (SELECT m.id, m.queue, m.group_key, m.previous_id,
                           (m.claim_open AND m.claimed_at > pg_postmaster_start_time()) AS suspect,
                           m.xmin AS seen, m.priority, m.visible_at
                      FROM pgqueue.message m
                     WHERE m.queue = :queue AND m.priority = p.priority AND m.visible_at <= now()
                       AND (:may_take_suspects OR NOT ((m.claim_open AND m.claimed_at > pg_postmaster_start_time())
                            OR m.id IN (SELECT unnest(CASE WHEN h.in_turn THEN h.ids[1:1] ELSE h.ids END)
                                          FROM pgqueue.holding h WHERE (h.queue = :queue OR h.queue IS NULL)
                                                                   AND h.opened_at > pg_postmaster_start_time() AND h.ids <> '{}')))
                       AND m.headers @> ANY (:filter::jsonb[]) AND m.headers <> '{}'::jsonb -- if filtered
                       AND (m.visible_at, m.id) > ('epoch'::timestamptz + :after_visible_at_us * interval '1 microsecond', :after_id)
                     ORDER BY m.visible_at, m.id
                     LIMIT 10 * ({batch} + 1000)) m
             WHERE m.group_key IS NULL
                OR (SELECT o.id FROM pgqueue.message o
                     WHERE o.queue = m.queue AND o.group_key = m.group_key AND o.id < m.id
                       AND o.id >= COALESCE(m.previous_id, 0)
                     ORDER BY o.id DESC LIMIT 1) IS NULL
             LIMIT {batch} + 1000) c
     WHERE pg_try_advisory_lock(:namespace, c.id::bit(32)::int4)
     LIMIT {batch}
),
listed_by_dead AS MATERIALIZED (
    SELECT pgqueue.listed_by_the_dead(:queue, ARRAY(SELECT id FROM locked)) AS ids WHERE EXISTS (SELECT 1 FROM locked)
),
suspicion AS (
    SELECT l.id, l.seen, l.suspect, COALESCE(l.id = ANY ((SELECT ids FROM listed_by_dead)::bigint[]), false) AS listed
      FROM locked l
),
to_claim AS (
    SELECT id, false AS suspect, false AS listed, seen FROM suspicion
     WHERE NOT EXISTS (SELECT 1 FROM suspicion WHERE suspect OR listed)
    UNION ALL
    SELECT id, true, listed, seen FROM suspicion WHERE suspect OR listed
),
claimed_unchanged AS (
    SELECT m.id, m.queue, m.payload, m.headers, m.priority, m.visible_at, m.attempts,
           m.max_attempts, m.created_at, m.last_error, false AS suspect
      FROM pgqueue.message m
     WHERE m.id = ANY (ARRAY(SELECT id FROM to_claim WHERE NOT suspect))
       AND m.xmax = '0'::xid AND (m.queue = :queue) IS TRUE AND m.visible_at <= now()
       AND (SELECT NOT row_security_active('pgqueue.message') OR pgqueue.queue_allowed(:queue, true, current_user))
),
claimed_rewritten AS (
    UPDATE pgqueue.message m
       SET attempts = m.attempts + CASE WHEN (l.suspect AND m.xmin = l.seen) OR l.listed
                                             OR (m.claim_open AND m.claimed_at > pg_postmaster_start_time())
                                        THEN 1 ELSE 0 END,
           claim_open = false, claimed_at = now()
      FROM to_claim l
     WHERE m.id = ANY (ARRAY(SELECT id FROM to_claim WHERE id NOT IN (SELECT id FROM claimed_unchanged)))
       AND m.id = l.id AND (m.queue = :queue) IS TRUE AND m.visible_at <= now()
    RETURNING m.id, m.queue, m.payload, m.headers, m.priority, m.visible_at, m.attempts,
              m.max_attempts, m.created_at, m.last_error, l.suspect
),
claimed AS (
    SELECT * FROM claimed_unchanged UNION ALL SELECT * FROM claimed_rewritten
),
taken_from_the_dead AS MATERIALIZED (
    SELECT CASE WHEN EXISTS (SELECT 1 FROM claimed WHERE suspect)
                THEN pgqueue.unlist(ARRAY(SELECT id FROM claimed WHERE suspect), current_user) END AS changed
),
holding_updated AS (
    UPDATE pgqueue.holding h
       SET ids = ARRAY(SELECT id FROM claimed ORDER BY priority, visible_at, id),
           queue = :queue,
           in_turn = EXISTS (SELECT 1 FROM claimed WHERE suspect)
     WHERE h.session = :session AND (cardinality(h.ids) > 0 OR EXISTS (SELECT 1 FROM claimed))
)
(SELECT l.id,
        CASE WHEN c.id IS NOT NULL THEN 'claimed' WHEN l.id IN (SELECT id FROM to_claim) THEN 'gone' ELSE 'left' END AS kind,
        CASE WHEN c.id IS NULL THEN pg_advisory_unlock(:namespace, l.id::bit(32)::int4) END AS unlocked,
        c.suspect AS in_turn,
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
        CASE WHEN l.id IN (SELECT id FROM to_claim) THEN l.priority END AS place_priority,
        CASE WHEN l.id IN (SELECT id FROM to_claim)
             THEN (extract(epoch FROM l.visible_at) * 1000000)::bigint END AS place_visible_at_us,
        NULL::bigint AS next_due_ms
   FROM locked l
   LEFT JOIN claimed c ON c.id = l.id
  CROSS JOIN taken_from_the_dead
   LEFT JOIN LATERAL (SELECT c.payload::text AS text) p ON true
   LEFT JOIN pgqueue.queue q ON q.name = c.queue
  ORDER BY c.priority, c.visible_at, l.id)
UNION ALL
SELECT NULL, 'next_due', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
       NULL, NULL,
       (SELECT ceil(extract(epoch FROM min(n.visible_at) - now()) * 1000)::bigint
          FROM priorities p
         CROSS JOIN LATERAL (
                SELECT m.visible_at FROM pgqueue.message m
                 WHERE m.queue = :queue AND m.priority = p.priority
                   AND m.visible_at > now() AND m.visible_at < 'infinity'
                 ORDER BY m.visible_at LIMIT 1) n)
 WHERE NOT EXISTS (SELECT 1 FROM locked);

-- name: claim_scanning_heads
-- claim_walk for a queue whose heads are scarce (its poller's last claim came back short): a few
-- FIFO groups hold the backlog, their heads are the only messages a claim can take, and a walk of
-- the claim index meets little else than their later messages. heads steps from group to group
-- through the group index (one descent per group) and gives each group's first message in the
-- statement's snapshot; scanned_heads keeps the first {batch} + 1000 groups in key order, and
-- scanned_up_to says up to which group key, null when it is every group. The walk counts every
-- row it walks, skips the rows of the groups the scan covered and tests the others for being
-- heads; the scanned heads come after the walk's candidates, in the claim index's order, up to
-- what the walk left of the batch. The 'next_due' row as claim_walk's, a short claim's only where
-- the queue holds no FIFO group at all.
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
walk_locked AS (
    SELECT c.id, c.suspect, c.seen, c.priority, c.visible_at
      FROM priorities p
     CROSS JOIN LATERAL (
            SELECT m.id, m.queue, m.group_key, m.previous_id,
                   (m.claim_open AND m.claimed_at > pg_postmaster_start_time()) AS suspect,
                   m.xmin AS seen, m.priority, m.visible_at
              FROM pgqueue.message m
             WHERE m.queue = :queue AND m.priority = p.priority AND m.visible_at <= now()
               AND (:may_take_suspects OR NOT ((m.claim_open AND m.claimed_at > pg_postmaster_start_time())
                    OR m.id IN (SELECT unnest(CASE WHEN h.in_turn THEN h.ids[1:1] ELSE h.ids END)
                                  FROM pgqueue.holding h WHERE (h.queue = :queue OR h.queue IS NULL)
                                                           AND h.opened_at > pg_postmaster_start_time() AND h.ids <> '{}')))
               AND m.headers @> ANY (:filter::jsonb[]) AND m.headers <> '{}'::jsonb -- if filtered
             ORDER BY m.visible_at, m.id
             LIMIT {batch} + 1000) c
     WHERE CASE WHEN c.group_key <= COALESCE((SELECT group_key FROM scanned_up_to), c.group_key) THEN false
                WHEN c.group_key IS NOT NULL
                     AND (SELECT o.id FROM pgqueue.message o
                           WHERE o.queue = c.queue AND o.group_key = c.group_key AND o.id < c.id
                             AND o.id >= COALESCE(c.previous_id, 0)
                           ORDER BY o.id DESC LIMIT 1) IS NOT NULL THEN false
                ELSE pg_try_advisory_lock(:namespace, c.id::bit(32)::int4) END
     LIMIT {batch}
),
scanned_head_rows AS MATERIALIZED (
    SELECT m.id, (m.claim_open AND m.claimed_at > pg_postmaster_start_time()) AS suspect, m.xmin AS seen,
           m.priority, m.visible_at
      FROM pgqueue.message m
     WHERE m.id = ANY (ARRAY(SELECT id FROM scanned_heads))
       AND m.visible_at <= now() AND m.priority IN (SELECT priority FROM priorities)
       AND (:may_take_suspects OR NOT ((m.claim_open AND m.claimed_at > pg_postmaster_start_time())
            OR m.id IN (SELECT unnest(CASE WHEN h.in_turn THEN h.ids[1:1] ELSE h.ids END)
                          FROM pgqueue.holding h WHERE (h.queue = :queue OR h.queue IS NULL)
                                                   AND h.opened_at > pg_postmaster_start_time() AND h.ids <> '{}')))
       AND m.headers @> ANY (:filter::jsonb[]) AND m.headers <> '{}'::jsonb -- if filtered
     ORDER BY m.priority, m.visible_at, m.id
),
head_locked AS MATERIALIZED (
    SELECT h.id, h.suspect, h.seen, h.priority, h.visible_at FROM scanned_head_rows h
     WHERE pg_try_advisory_lock(:namespace, h.id::bit(32)::int4)
     LIMIT greatest(0, {batch} - (SELECT count(*) FROM walk_locked))
),
locked AS (
    SELECT id, suspect, seen, priority, visible_at FROM walk_locked
    UNION ALL
    SELECT id, suspect, seen, priority, visible_at FROM head_locked
),
listed_by_dead AS MATERIALIZED (
    SELECT pgqueue.listed_by_the_dead(:queue, ARRAY(SELECT id FROM locked)) AS ids WHERE EXISTS (SELECT 1 FROM locked)
),
suspicion AS (
    SELECT l.id, l.seen, l.suspect, COALESCE(l.id = ANY ((SELECT ids FROM listed_by_dead)::bigint[]), false) AS listed
      FROM locked l
),
to_claim AS (
    SELECT id, false AS suspect, false AS listed, seen FROM suspicion
     WHERE NOT EXISTS (SELECT 1 FROM suspicion WHERE suspect OR listed)
    UNION ALL
    SELECT id, true, listed, seen FROM suspicion WHERE suspect OR listed
),
claimed_unchanged AS (
    SELECT m.id, m.queue, m.payload, m.headers, m.priority, m.visible_at, m.attempts,
           m.max_attempts, m.created_at, m.last_error, false AS suspect
      FROM pgqueue.message m
     WHERE m.id = ANY (ARRAY(SELECT id FROM to_claim WHERE NOT suspect))
       AND m.xmax = '0'::xid AND (m.queue = :queue) IS TRUE AND m.visible_at <= now()
       AND (SELECT NOT row_security_active('pgqueue.message') OR pgqueue.queue_allowed(:queue, true, current_user))
),
claimed_rewritten AS (
    UPDATE pgqueue.message m
       SET attempts = m.attempts + CASE WHEN (l.suspect AND m.xmin = l.seen) OR l.listed
                                             OR (m.claim_open AND m.claimed_at > pg_postmaster_start_time())
                                        THEN 1 ELSE 0 END,
           claim_open = false, claimed_at = now()
      FROM to_claim l
     WHERE m.id = ANY (ARRAY(SELECT id FROM to_claim WHERE id NOT IN (SELECT id FROM claimed_unchanged)))
       AND m.id = l.id AND (m.queue = :queue) IS TRUE AND m.visible_at <= now()
    RETURNING m.id, m.queue, m.payload, m.headers, m.priority, m.visible_at, m.attempts,
              m.max_attempts, m.created_at, m.last_error, l.suspect
),
claimed AS (
    SELECT * FROM claimed_unchanged UNION ALL SELECT * FROM claimed_rewritten
),
taken_from_the_dead AS MATERIALIZED (
    SELECT CASE WHEN EXISTS (SELECT 1 FROM claimed WHERE suspect)
                THEN pgqueue.unlist(ARRAY(SELECT id FROM claimed WHERE suspect), current_user) END AS changed
),
holding_updated AS (
    UPDATE pgqueue.holding h
       SET ids = ARRAY(SELECT id FROM claimed ORDER BY priority, visible_at, id),
           queue = :queue,
           in_turn = EXISTS (SELECT 1 FROM claimed WHERE suspect)
     WHERE h.session = :session AND (cardinality(h.ids) > 0 OR EXISTS (SELECT 1 FROM claimed))
)
(SELECT l.id,
        CASE WHEN c.id IS NOT NULL THEN 'claimed' WHEN l.id IN (SELECT id FROM to_claim) THEN 'gone' ELSE 'left' END AS kind,
        CASE WHEN c.id IS NULL THEN pg_advisory_unlock(:namespace, l.id::bit(32)::int4) END AS unlocked,
        c.suspect AS in_turn,
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
        CASE WHEN l.id IN (SELECT id FROM to_claim) THEN l.priority END AS place_priority,
        CASE WHEN l.id IN (SELECT id FROM to_claim)
             THEN (extract(epoch FROM l.visible_at) * 1000000)::bigint END AS place_visible_at_us,
        NULL::bigint AS next_due_ms
   FROM locked l
   LEFT JOIN claimed c ON c.id = l.id
  CROSS JOIN taken_from_the_dead
   LEFT JOIN LATERAL (SELECT c.payload::text AS text) p ON true
   LEFT JOIN pgqueue.queue q ON q.name = c.queue
  ORDER BY c.priority, c.visible_at, l.id)
UNION ALL
SELECT NULL, 'next_due', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
       NULL, NULL,
       (SELECT ceil(extract(epoch FROM min(n.visible_at) - now()) * 1000)::bigint
          FROM priorities p
         CROSS JOIN LATERAL (
                SELECT m.visible_at FROM pgqueue.message m
                 WHERE m.queue = :queue AND m.priority = p.priority
                   AND m.visible_at > now() AND m.visible_at < 'infinity'
                 ORDER BY m.visible_at LIMIT 1) n)
 WHERE NOT EXISTS (SELECT 1 FROM locked)
    OR ((SELECT count(*) FROM claimed) < {batch}
        AND NOT EXISTS (SELECT 1 FROM scanned_heads)
        AND NOT EXISTS (SELECT 1 FROM locked WHERE id NOT IN (SELECT id FROM claimed))
        AND NOT EXISTS (SELECT 1 FROM claimed WHERE suspect));

-- name: claim_by_id
-- Claims message :id of :queue if it is visible, free (no session or transaction holds its
-- key), in a FIFO group its group's head, and its queue is not paused. The conditions are tested in
-- a materialized CTE, before the lock: in one WHERE clause PostgreSQL tests the cheap lock function
-- before costlier conditions, and a row they then reject would keep the lock its session took. A
-- suspect (its holder died, or the last transaction that locked it aborted and was not a recorded
-- removal's: consumer_aborted, V19) has its lost attempt counted and its claim left open
-- (claim_open: if this session dies too, the next claim counts this attempt); any other row is
-- listed in the session's holding row. Result columns as claim_walk's.
WITH candidate AS MATERIALIZED (
    SELECT m.id, m.xmin AS seen,
           ((m.claim_open AND m.claimed_at > pg_postmaster_start_time())
            OR m.id IN (SELECT unnest(CASE WHEN h.in_turn THEN h.ids[1:1] ELSE h.ids END)
                          FROM pgqueue.holding h WHERE (h.queue = :queue OR h.queue IS NULL)
                                                   AND h.opened_at > pg_postmaster_start_time() AND h.ids <> '{}')
            OR CASE WHEN m.xmax = '0'::xid OR NOT pgqueue.locker_aborted(m.xmax) THEN false
                    ELSE pgqueue.consumer_aborted(m.xmax) END) AS suspect
      FROM pgqueue.message m
     WHERE m.id = :id AND (m.queue = :queue) IS TRUE AND m.visible_at <= now()
       AND (m.group_key IS NULL
            OR (SELECT o.id FROM pgqueue.message o
                 WHERE o.queue = m.queue AND o.group_key = m.group_key AND o.id < m.id
                   AND o.id >= COALESCE(m.previous_id, 0)
                 ORDER BY o.id DESC LIMIT 1) IS NULL)
       AND NOT EXISTS (SELECT 1 FROM pgqueue.queue q WHERE q.name = m.queue AND q.paused)
),
locked AS (
    SELECT id, suspect, seen FROM candidate WHERE pg_try_advisory_lock(:namespace, id::bit(32)::int4)
),
listed_by_dead AS MATERIALIZED (
    SELECT pgqueue.listed_by_the_dead(:queue, ARRAY(SELECT id FROM locked)) AS ids WHERE EXISTS (SELECT 1 FROM locked)
),
claimed AS (
    UPDATE pgqueue.message m
       SET attempts = m.attempts + CASE WHEN (l.suspect AND m.xmin = l.seen) OR l.listed
                                             OR (m.claim_open AND m.claimed_at > pg_postmaster_start_time())
                                        THEN 1 ELSE 0 END,
           claim_open = (l.suspect AND m.xmin = l.seen) OR l.listed
                        OR (m.claim_open AND m.claimed_at > pg_postmaster_start_time()),
           claimed_at = now()
      FROM (SELECT l.id, l.suspect, l.seen,
                   COALESCE(l.id = ANY ((SELECT ids FROM listed_by_dead)::bigint[]), false) AS listed
              FROM locked l) l
     WHERE m.id = l.id AND (m.queue = :queue) IS TRUE AND m.visible_at <= now()
    RETURNING m.id, m.queue, m.payload, m.headers, m.priority, m.visible_at, m.attempts,
              m.max_attempts, m.created_at, m.last_error, m.claim_open AS suspect
),
taken_from_the_dead AS MATERIALIZED (
    SELECT CASE WHEN EXISTS (SELECT 1 FROM claimed WHERE suspect)
                THEN pgqueue.unlist(ARRAY(SELECT id FROM claimed WHERE suspect), current_user) END AS changed
),
holding_updated AS (
    UPDATE pgqueue.holding h
       SET ids = ARRAY(SELECT id FROM claimed WHERE NOT suspect ORDER BY priority, visible_at, id),
           queue = :queue,
           in_turn = false
     WHERE h.session = :session AND (cardinality(h.ids) > 0 OR EXISTS (SELECT 1 FROM claimed WHERE NOT suspect))
)
SELECT l.id,
       CASE WHEN c.id IS NOT NULL THEN 'claimed' ELSE 'gone' END AS kind,
       CASE WHEN c.id IS NULL THEN pg_advisory_unlock(:namespace, l.id::bit(32)::int4) END AS unlocked,
       false AS in_turn,
       CASE WHEN octet_length(p.text) <= :payload_limit THEN p.text END AS payload,
       c.headers::text AS headers, c.priority, c.attempts + 1 AS attempt, c.created_at,
       COALESCE(c.max_attempts, q.max_attempts, 5) AS max_attempts,
       q.dead_letter_queue,
       (q.retention_ms IS NOT NULL OR q.deduplication_window_ms IS NOT NULL) AS keeps,
       COALESCE(q.backoff_initial_ms, 1000) AS backoff_initial_ms,
       COALESCE(q.backoff_multiplier, 2.0) AS backoff_multiplier,
       COALESCE(q.backoff_max_ms, 600000) AS backoff_max_ms,
       c.last_error,
       octet_length(p.text) AS payload_bytes
  FROM locked l
  LEFT JOIN claimed c ON c.id = l.id
 CROSS JOIN taken_from_the_dead
  LEFT JOIN LATERAL (SELECT c.payload::text AS text) p ON true
  LEFT JOIN pgqueue.queue q ON q.name = c.queue;

-- name: claim_suspect
-- Claims message :id of a transactional queue if it is a suspect (as in claim_by_id), and
-- counts the attempt its dead consumer never wrote and this one, so that a message that kills its
-- consumer still reaches its dead-letter queue; the caller runs it alone, holding this session's
-- lock. Result columns as claim_walk's.
WITH candidate AS MATERIALIZED (
    SELECT m.id, m.xmin AS seen,
           ((m.claim_open AND m.claimed_at > pg_postmaster_start_time())
            OR m.id IN (SELECT unnest(CASE WHEN h.in_turn THEN h.ids[1:1] ELSE h.ids END)
                          FROM pgqueue.holding h WHERE (h.queue = :queue OR h.queue IS NULL)
                                                   AND h.opened_at > pg_postmaster_start_time() AND h.ids <> '{}')
            OR CASE WHEN m.xmax = '0'::xid OR NOT pgqueue.locker_aborted(m.xmax) THEN false
                    ELSE pgqueue.consumer_aborted(m.xmax) END) AS suspect
      FROM pgqueue.message m
     WHERE m.id = :id AND (m.queue = :queue) IS TRUE AND m.visible_at <= now()
       AND ((m.claim_open AND m.claimed_at > pg_postmaster_start_time())
            OR m.id IN (SELECT unnest(CASE WHEN h.in_turn THEN h.ids[1:1] ELSE h.ids END)
                          FROM pgqueue.holding h WHERE (h.queue = :queue OR h.queue IS NULL)
                                                   AND h.opened_at > pg_postmaster_start_time() AND h.ids <> '{}')
            OR CASE WHEN m.xmax = '0'::xid OR NOT pgqueue.locker_aborted(m.xmax) THEN false
                    ELSE pgqueue.consumer_aborted(m.xmax) END)
),
locked AS (
    SELECT id, suspect, seen FROM candidate WHERE pg_try_advisory_lock(:namespace, id::bit(32)::int4)
),
listed_by_dead AS MATERIALIZED (
    SELECT pgqueue.listed_by_the_dead(:queue, ARRAY(SELECT id FROM locked)) AS ids WHERE EXISTS (SELECT 1 FROM locked)
),
claimed AS (
    UPDATE pgqueue.message m
       SET attempts = m.attempts + CASE WHEN (l.suspect AND m.xmin = l.seen) OR l.listed
                                             OR (m.claim_open AND m.claimed_at > pg_postmaster_start_time())
                                        THEN 1 ELSE 0 END,
           claim_open = (l.suspect AND m.xmin = l.seen) OR l.listed
                        OR (m.claim_open AND m.claimed_at > pg_postmaster_start_time()),
           claimed_at = now()
      FROM (SELECT l.id, l.suspect, l.seen,
                   COALESCE(l.id = ANY ((SELECT ids FROM listed_by_dead)::bigint[]), false) AS listed
              FROM locked l) l
     WHERE m.id = l.id AND (m.queue = :queue) IS TRUE AND m.visible_at <= now()
    RETURNING m.id, m.queue, m.payload, m.headers, m.priority, m.visible_at, m.attempts,
              m.max_attempts, m.created_at, m.last_error, m.claim_open AS suspect
),
taken_from_the_dead AS MATERIALIZED (
    SELECT CASE WHEN EXISTS (SELECT 1 FROM claimed WHERE suspect)
                THEN pgqueue.unlist(ARRAY(SELECT id FROM claimed WHERE suspect), current_user) END AS changed
),
holding_updated AS (
    UPDATE pgqueue.holding h
       SET ids = ARRAY(SELECT id FROM claimed WHERE NOT suspect ORDER BY priority, visible_at, id),
           queue = :queue,
           in_turn = false
     WHERE h.session = :session AND (cardinality(h.ids) > 0 OR EXISTS (SELECT 1 FROM claimed WHERE NOT suspect))
)
SELECT l.id,
       CASE WHEN c.id IS NOT NULL THEN 'claimed' ELSE 'gone' END AS kind,
       CASE WHEN c.id IS NULL THEN pg_advisory_unlock(:namespace, l.id::bit(32)::int4) END AS unlocked,
       false AS in_turn,
       CASE WHEN octet_length(p.text) <= :payload_limit THEN p.text END AS payload,
       c.headers::text AS headers, c.priority, c.attempts + 1 AS attempt, c.created_at,
       COALESCE(c.max_attempts, q.max_attempts, 5) AS max_attempts,
       q.dead_letter_queue,
       (q.retention_ms IS NOT NULL OR q.deduplication_window_ms IS NOT NULL) AS keeps,
       COALESCE(q.backoff_initial_ms, 1000) AS backoff_initial_ms,
       COALESCE(q.backoff_multiplier, 2.0) AS backoff_multiplier,
       COALESCE(q.backoff_max_ms, 600000) AS backoff_max_ms,
       c.last_error,
       octet_length(p.text) AS payload_bytes
  FROM locked l
  LEFT JOIN claimed c ON c.id = l.id
 CROSS JOIN taken_from_the_dead
  LEFT JOIN LATERAL (SELECT c.payload::text AS text) p ON true
  LEFT JOIN pgqueue.queue q ON q.name = c.queue;

-- name: ack
-- Deletes held messages. The pid guard fences a lease whose session died: on any other session
-- the statement deletes nothing. The queue guard leaves a row moved while held (by hand, say): it
-- is released instead. Each deleted row's session lock becomes a transaction lock
-- (unlock_at_commit, V13), so no claim can lock the row before the delete commits; a claim whose
-- snapshot predates that commit can still lock it after, and its re-check then finds it gone. The
-- ids leave the session's holding row, the others keep their order (the first of messages handed
-- out in turn is the one a handler has).
WITH acked AS (
    DELETE FROM pgqueue.message
     WHERE id = ANY(:ids) AND (queue = :queue) IS TRUE AND pg_backend_pid() = :pid
    RETURNING id, pgqueue.unlock_at_commit(:namespace, id::bit(32)::int4) AS unlocked
),
unheld AS (
    UPDATE pgqueue.holding h
       SET ids = ARRAY(SELECT i FROM unnest(h.ids) WITH ORDINALITY AS t(i, n)
                        WHERE i NOT IN (SELECT id FROM acked) ORDER BY n)
     WHERE h.session = :session AND EXISTS (SELECT 1 FROM acked)
)
SELECT id, unlocked FROM acked;

-- name: ack_keeping
-- As ack, for messages of a queue with a retention or a deduplication window (a claim returns
-- keeps): also archives them (V23), this attempt counted (attempts holds the ended ones), and keeps
-- their keys (V20; kept, which the last line runs). Both read the deleted rows as the statement's
-- snapshot still has them, each behind a one-time filter on the queue's definition. A separate
-- statement so that ack stays one DELETE: these parts cost a fifth of a transactional drain at
-- batches of 10 even when their filters were false.
WITH acked AS (
    DELETE FROM pgqueue.message
     WHERE id = ANY(:ids) AND (queue = :queue) IS TRUE AND pg_backend_pid() = :pid
    RETURNING id, pgqueue.unlock_at_commit(:namespace, id::bit(32)::int4) AS unlocked
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
),
unheld AS (
    UPDATE pgqueue.holding h
       SET ids = ARRAY(SELECT i FROM unnest(h.ids) WITH ORDINALITY AS t(i, n)
                        WHERE i NOT IN (SELECT id FROM acked) ORDER BY n)
     WHERE h.session = :session AND EXISTS (SELECT 1 FROM acked)
)
SELECT id, unlocked FROM acked WHERE (SELECT count(*) FROM kept) >= 0;

-- name: retry
-- Counts the failed attempt of held messages, makes them visible again after their delays,
-- records the errors (a null error keeps last_error) and releases them, as ack does. Wakes the
-- queue's pollers in every process (one notification per queue: equal ones are folded at commit),
-- so that they learn when the retry is due.
WITH r AS (SELECT * FROM unnest(:ids::bigint[], :delays_ms::bigint[], :errors::text[]) AS r(id, delay_ms, error)),
retried AS (
    UPDATE pgqueue.message m
       SET attempts = m.attempts + 1, visible_at = now() + r.delay_ms * interval '1 millisecond',
           last_error = COALESCE(r.error, m.last_error), claim_open = false
      FROM r
     WHERE m.id = ANY (ARRAY(SELECT id FROM r)) AND m.id = r.id AND pg_backend_pid() = :pid
    RETURNING m.id, m.queue, pgqueue.unlock_at_commit(:namespace, m.id::bit(32)::int4) AS unlocked
),
unheld AS (
    UPDATE pgqueue.holding h
       SET ids = ARRAY(SELECT i FROM unnest(h.ids) WITH ORDINALITY AS t(i, n)
                        WHERE i NOT IN (SELECT id FROM retried) ORDER BY n)
     WHERE h.session = :session AND EXISTS (SELECT 1 FROM retried)
)
SELECT id, unlocked, pg_notify(:channel, queue) FROM retried;

-- name: dead_letter
-- Moves held messages to their dead-letter queues with a fresh attempt count, keeps where they
-- came from in the headers, releases them as ack does, and wakes the dead-letter queues'
-- listeners. A message that already is a dead letter (or whose dead-letter queue is its own) is
-- parked instead: it stays, invisible until a redrive, so no configuration moves it on and on.
-- A message moved out of a queue with a retention is archived as it was there (V23), and the key
-- of one moved out of a queue with a deduplication window is kept (V20): both read the rows from
-- the statement's snapshot, which still has them as they were.
WITH n AS (SELECT * FROM unnest(:ids::bigint[], :dead_letter_queues::text[], :errors::text[]) AS n(id, dlq, error)),
moved AS (
    UPDATE pgqueue.message m
       SET queue = CASE WHEN d.park THEN m.queue ELSE d.dlq END,
           attempts = CASE WHEN d.park THEN m.attempts + 1 ELSE 0 END,
           visible_at = CASE WHEN d.park THEN 'infinity' ELSE now() END,
           last_error = d.error, claim_open = false,
           deduplication_key = CASE WHEN d.park THEN m.deduplication_key END,
           group_key = CASE WHEN d.park THEN m.group_key END,
           headers = CASE WHEN d.park THEN m.headers
                          ELSE m.headers || jsonb_strip_nulls(jsonb_build_object('pgqueue-group', m.group_key))
                               || jsonb_build_object('pgqueue-dead-lettered-from', m.queue,
                                                     'pgqueue-dead-lettered-attempts', (m.attempts + 1)::text) END
      FROM (SELECT n.id, n.dlq, n.error, jsonb_exists(o.headers, 'pgqueue-dead-lettered-from') OR n.dlq = o.queue
              FROM n JOIN pgqueue.message o ON o.id = n.id
             WHERE o.id = ANY (ARRAY(SELECT id FROM n))) AS d(id, dlq, error, park)
     WHERE m.id = ANY (ARRAY(SELECT id FROM n)) AND m.id = d.id AND pg_backend_pid() = :pid
    RETURNING m.id, m.queue, d.park, pgqueue.unlock_at_commit(:namespace, m.id::bit(32)::int4) AS unlocked
),
archived AS (
    INSERT INTO pgqueue.archive (id, queue, outcome, payload, headers, priority, attempts, max_attempts, group_key,
                                 deduplication_key, last_error, created_at, expires_at)
    SELECT o.id, o.queue, 'dead-lettered', o.payload, o.headers, o.priority, o.attempts + 1, o.max_attempts,
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
),
unheld AS (
    UPDATE pgqueue.holding h
       SET ids = ARRAY(SELECT i FROM unnest(h.ids) WITH ORDINALITY AS t(i, n)
                        WHERE i NOT IN (SELECT id FROM moved) ORDER BY n)
     WHERE h.session = :session AND EXISTS (SELECT 1 FROM moved)
)
SELECT id, unlocked, CASE WHEN NOT park THEN pg_notify(:channel, queue) END FROM moved
 WHERE (SELECT count(*) FROM kept) >= 0;

-- name: release
-- Releases held messages unchanged but for claim_open, and their attempt when :attempt_ended (a
-- handler saw them; not for a stopping poller's rest of a batch, nor for a message a transaction
-- completed), takes them out of the session's holding row, and unlocks the ids whose rows are gone
-- (deleted by hand under the lock).
WITH released AS (
    UPDATE pgqueue.message m
       SET claim_open = false, attempts = m.attempts + CASE WHEN :attempt_ended THEN 1 ELSE 0 END
     WHERE m.id = ANY(:ids)
    RETURNING m.id, pgqueue.unlock_at_commit(:namespace, m.id::bit(32)::int4)
),
unheld AS (
    UPDATE pgqueue.holding h
       SET ids = ARRAY(SELECT i FROM unnest(h.ids) WITH ORDINALITY AS t(i, n)
                        WHERE i <> ALL (:ids::bigint[]) ORDER BY n)
     WHERE h.session = :session
)
SELECT id FROM released
UNION ALL
SELECT t.id FROM unnest(:ids::bigint[]) AS t(id)
 WHERE CASE WHEN t.id NOT IN (SELECT id FROM released)
            THEN pg_advisory_unlock(:namespace, t.id::bit(32)::int4) ELSE false END;

-- name: queues_with_visible_messages
-- Which of :queues hold a message visible now, of a queue not paused: run once a poll interval
-- for all of an application's listeners (on a pooled connection, outside any session), which
-- then wakes an idle poller of each queue named. Finds what no notification announces: a message
-- freed because its consumer died, a FIFO group's next message once its head is gone. A message
-- held by a live consumer counts too (it is visible; only a claim can tell), which costs its
-- queue one empty claim a poll interval while it is held. Walks each queue's priorities as the
-- claims do, one index descent per priority, so that a queue of delayed messages costs a probe
-- per priority, not a scan. Whether a priority has a visible message is a probe too: a LATERAL
-- with a LIMIT, which the planner cannot turn into a join. As an EXISTS, the generic plan made
-- while the table was empty hashed every visible message of the table on every call.
WITH RECURSIVE priorities AS (
    SELECT q.queue, (SELECT m.priority FROM pgqueue.message m WHERE m.queue = q.queue
                      ORDER BY m.priority LIMIT 1) AS priority
      FROM unnest(:queues::text[]) AS q(queue)
    UNION ALL
    SELECT p.queue, (SELECT m.priority FROM pgqueue.message m WHERE m.queue = p.queue AND m.priority > p.priority
                      ORDER BY m.priority LIMIT 1)
      FROM priorities p
     WHERE p.priority IS NOT NULL
)
SELECT DISTINCT p.queue
  FROM priorities p
 CROSS JOIN LATERAL (SELECT 1 FROM pgqueue.message m
                      WHERE m.queue = p.queue AND m.priority = p.priority AND m.visible_at <= now()
                      LIMIT 1) visible
 WHERE p.priority IS NOT NULL
   AND NOT EXISTS (SELECT 1 FROM pgqueue.queue q WHERE q.name = p.queue AND q.paused);
