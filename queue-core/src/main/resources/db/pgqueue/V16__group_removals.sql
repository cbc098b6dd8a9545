-- Messages that leave a FIFO group other than as its head: cancelled (QueueTemplate.cancel, the
-- dashboard's cancel and delete), purged (QueueAdmin.purge, and drop with force), or moved out of
-- their group by a redrive. A claim tests a grouped row for being its group's head by looking for
-- an older message of the group no lower than the row's previous_id (V15), which is exact only if
-- every such row R keeps this invariant: if an older message of R's group is in the queue, one is
-- at or above R's previous_id. A head's completion keeps it (nothing older is left). A message X
-- that leaves behind an older one, P the newest of those, breaks it for the first message S after
-- X still in the queue when S's previous_id lies between P and X; the rows after S keep it, as S
-- itself is in their range. So such a removal lowers S's previous_id to P (leave_groups below).
--
-- Concurrency. A grouped insert records the group's newest message under the group's lock
-- (group_tail), so a removal that reads S must not miss an insert that read X: it takes
-- the same lock before it reads the group, and reads it on a snapshot taken after the lock (each
-- query of a VOLATILE PL/pgSQL function runs on a new snapshot in READ COMMITTED, see V14). Two
-- removals in one group are serialized by that lock too (each reads the other's fix). A removal of
-- one message takes the group's lock; a bulk removal (a purge chunk, a redrive) may touch a
-- thousand groups, and a lock each could exhaust the lock table (max_locks_per_transaction), so
-- every grouped insert also takes a lock on its queue, shared, and a bulk removal takes that one
-- lock exclusively: it waits for the grouped sends in progress to the queue and holds off new ones
-- until it commits (a purge chunk, milliseconds). The queue's key is its group key for the empty
-- group, which no message can have (V7's CHECK): a hash collision with a group key only makes one
-- wait for the other. Locks are always taken queue first, then group.
--
-- A removal never waits on a row a consumer holds: the removed rows are skipped if a consumer
-- holds them (their key, or FOR UPDATE SKIP LOCKED), and the row it updates is S, which is not its
-- group's head (P is older) and so is not held. A consumer's ack, retry or dead letter completes a
-- held message, which is its group's head (claims take only heads): those need nothing here.
--
-- REPEATABLE READ and SERIALIZABLE: their snapshot is taken before any lock of the transaction's
-- first statement, so a removal there could miss a send to the group committed since and leave it
-- a second head. Removing a grouped message in such a transaction fails saying so (ungrouped ones
-- are removed as always). A send there records its group's oldest message it sees instead of the
-- newest (group_tail).

-- The lock namespace in the high half of a bigint, as the single-bigint advisory keys of V7 have it.
-- IMMUTABLE, though it reads a table, so that it is folded into the plan of the expression that
-- calls it, once per session: the namespace is fixed when the schema is created (V4). A grouped
-- insert's locks are then plain expressions, which PL/pgSQL evaluates without starting the
-- executor, as a query reading the setting table per row (V7's) needs it.
CREATE FUNCTION "${flyway:defaultSchema}".lock_namespace_key() RETURNS bigint
    LANGUAGE sql IMMUTABLE AS
$$
    SELECT (SELECT lock_namespace FROM "${flyway:defaultSchema}".setting)::bigint << 32
$$;

-- The advisory-lock key of FIFO group group_key of a queue, or of the whole queue for the empty
-- group: the lock namespace in the high half, a hash of queue and group in the low half (as V7).
CREATE FUNCTION "${flyway:defaultSchema}".fifo_lock_key(queue text, group_key text) RETURNS bigint
    LANGUAGE sql STABLE AS
$$
    SELECT "${flyway:defaultSchema}".lock_namespace_key() | (hashtext($1 || E'\n' || $2)::bigint & 4294967295)
$$;

-- The message table's id sequence. IMMUTABLE, so that the call, which has no argument, is folded
-- into the plan of the expression that makes it, once per session, rather than looked up in the
-- catalogs per grouped insert (pg_get_serial_sequence scans pg_depend; in a bulk grouped insert
-- that was a good part of the trigger's time). The sequence of an identity column stays.
CREATE FUNCTION "${flyway:defaultSchema}".message_id_sequence() RETURNS regclass
    LANGUAGE sql IMMUTABLE AS
$$
    SELECT pg_get_serial_sequence('"${flyway:defaultSchema}".message', 'id')::regclass
$$;

-- Takes the locks a grouped insert into group of_group of queue of_queue takes (the queue's
-- shared, then the group's, see above) and returns what the insert records as its previous_id:
-- the group's newest message, 0 if the group has none (0 bounds nothing, as null does). The
-- look-up reads a snapshot taken after the lock (a new query of a VOLATILE function in READ
-- COMMITTED), where every earlier insert into the group has committed.
--
-- One descent of the group index whatever the statistics say. Written as "max(id) where queue =
-- .. and group_key = ..", the look-up was planned on a table analyzed while full and then drained
-- and analyzed empty (what autovacuum's analyze leaves once a queue drains: pages, no rows, so
-- every plan looks free) as a bitmap scan of the queue in the claim index with the group as a
-- filter, and once the drained table was vacuumed as well as a backward walk of the primary key
-- testing queue and group on each row: every grouped insert read its queue (or the other groups'
-- newer messages), and a bulk grouped insert was quadratic. enable_seqscan = off rules out
-- neither. With equalities on queue and group every ordering on them is redundant, so any index in
-- id order serves "order by id desc limit 1" as well as the group index does. Here the queue is
-- compared with "= ANY (ARRAY[..])", which the group index takes as a key of its first column but
-- the planner does not treat as an equality, and the order asked for is (queue, id): only the
-- group index gives it (group_key being equal to a constant), and with sorts disabled every other
-- plan needs a disabled Sort node. The function's settings apply when its query is planned.
--
-- In REPEATABLE READ and SERIALIZABLE the look-up reads the transaction's snapshot, which may
-- still show a message that has left the group since (acked, cancelled or purged) and miss one
-- sent since: recording that as the newest could make the new message a second head (after a
-- removal of the group's newest message). It returns the oldest message of the group it sees:
-- every message of the group now in the queue and older than the new one is at or above it (an
-- older one would have committed before it, and be seen), so the head test stays exact; it only
-- steps over more entries.
CREATE FUNCTION "${flyway:defaultSchema}".group_tail(of_queue text, of_group text) RETURNS bigint
    LANGUAGE plpgsql VOLATILE SET enable_seqscan = off SET enable_sort = off SET enable_incremental_sort = off AS
$$
DECLARE
    locked boolean;
BEGIN
    -- Assignments rather than PERFORM, so that they are evaluated as expressions (see
    -- lock_namespace_key); the locks return void, which is not null.
    locked := pg_advisory_xact_lock_shared("${flyway:defaultSchema}".lock_namespace_key()
                                           | (hashtext(of_queue || E'\n')::bigint & 4294967295)) IS NULL;
    locked := pg_advisory_xact_lock("${flyway:defaultSchema}".lock_namespace_key()
                                    | (hashtext(of_queue || E'\n' || of_group)::bigint & 4294967295)) IS NULL;
    IF current_setting('transaction_isolation') = 'read committed' THEN
        RETURN COALESCE((SELECT o.id FROM "${flyway:defaultSchema}".message o
                          WHERE o.queue = ANY (ARRAY[of_queue]) AND o.group_key = of_group
                          ORDER BY o.queue DESC, o.id DESC LIMIT 1), 0);
    END IF;
    RETURN COALESCE((SELECT o.id FROM "${flyway:defaultSchema}".message o
                      WHERE o.queue = ANY (ARRAY[of_queue]) AND o.group_key = of_group
                      ORDER BY o.queue, o.id LIMIT 1), 0);
END
$$;

-- As V15's, through group_tail: the locks and the look-up, then the id, drawn under the group's
-- lock as V7 requires; previous_id null when the group had no message, as before.
CREATE OR REPLACE FUNCTION "${flyway:defaultSchema}".order_grouped_insert() RETURNS trigger
    LANGUAGE plpgsql AS
$$
BEGIN
    NEW.previous_id := NULLIF("${flyway:defaultSchema}".group_tail(NEW.queue, NEW.group_key), 0);
    NEW.id := nextval("${flyway:defaultSchema}".message_id_sequence());
    RETURN NEW;
END
$$;

-- A row that comes with its previous_id was ordered by the statement that inserts it
-- (send_batch_to_group): the trigger leaves it alone. previous_id is pgqueue's own column: a plain
-- INSERT leaves it out.
DROP TRIGGER message_grouped_insert ON "${flyway:defaultSchema}".message;
CREATE TRIGGER message_grouped_insert
    BEFORE INSERT ON "${flyway:defaultSchema}".message
    FOR EACH ROW WHEN (NEW.group_key IS NOT NULL AND NEW.previous_id IS NULL)
    EXECUTE FUNCTION "${flyway:defaultSchema}".order_grouped_insert();

-- QueueTemplate.sendBatch to a FIFO group: the batch's messages in payload order, their ids drawn
-- after the group's locks, each recording the one before it as its previous_id and the first the
-- group's tail. The trigger's work once per batch rather than once per row: a PL/pgSQL trigger
-- call per row, with its look-up, made a grouped batch of 100 cost three times an ungrouped one.
CREATE FUNCTION "${flyway:defaultSchema}".send_batch_to_group(of_queue text, batch_headers jsonb, batch_priority integer,
                                                          not_before timestamptz, delay_ms bigint,
                                                          batch_max_attempts integer, of_group text,
                                                          payloads text[])
    RETURNS SETOF bigint
    LANGUAGE plpgsql VOLATILE AS
$$
DECLARE
    tail bigint := "${flyway:defaultSchema}".group_tail(of_queue, of_group);
BEGIN
    RETURN QUERY
    INSERT INTO "${flyway:defaultSchema}".message (id, queue, payload, headers, priority, visible_at, max_attempts,
                                                   group_key, previous_id)
    SELECT b.id, of_queue, b.payload::jsonb, batch_headers, batch_priority,
           COALESCE(not_before, now() + delay_ms * interval '1 millisecond'), batch_max_attempts, of_group,
           COALESCE(lag(b.id) OVER (ORDER BY b.n), tail)
      FROM (SELECT nextval("${flyway:defaultSchema}".message_id_sequence()) AS id, p.payload, p.n
              FROM unnest(payloads) WITH ORDINALITY AS p(payload, n)
             ORDER BY p.n) b
     ORDER BY b.n
    RETURNING id;
END
$$;

-- Fails unless the transaction reads a new snapshot per statement (READ COMMITTED), naming what
-- the caller was about to do ("cancel message 17", ...) to a message of group g of queue q.
CREATE FUNCTION "${flyway:defaultSchema}".require_read_committed(what text, queue text, group_key text) RETURNS void
    LANGUAGE plpgsql STABLE AS
$$
BEGIN
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'Cannot % of FIFO group ''%'' in queue ''%'' in a % transaction: taking a message out of its '
                        'group needs READ COMMITTED', what, group_key, queue, upper(current_setting('transaction_isolation'))
            USING ERRCODE = 'invalid_transaction_state',
                  HINT = 'The group must be read after its lock is taken, on a newer snapshot than the transaction''s. '
                         'Run it in a READ COMMITTED transaction, or outside one.';
    END IF;
END
$$;

-- Mends the groups that the given messages (id, queue, group, previous_id as they were) have just
-- left, deleted or moved out by the caller's transaction, which holds their groups' locks (or their
-- queues', exclusively) and reads in READ COMMITTED. Per group, the messages that left are taken in
-- id order, in runs with no message still in the queue between them: for each run, S is the first
-- message still in the queue after it and P the newest one before it (at or above the run's first
-- previous_id, by the invariant); S's previous_id is lowered to P if it is higher. No P: the run
-- began at the head, S is the head now. Probes of the group index, one descent each whatever the
-- statistics say, shaped as group_tail's look-up for the same reason.
CREATE FUNCTION "${flyway:defaultSchema}".leave_groups(left_ids bigint[], left_queues text[], left_groups text[],
                                                   left_previous bigint[]) RETURNS void
    LANGUAGE plpgsql VOLATILE SET enable_seqscan = off SET enable_sort = off SET enable_incremental_sort = off AS
$$
DECLARE
    r record;
    run_first bigint;
    run_previous bigint;
    successor bigint;
    successor_previous bigint;
    older bigint;
BEGIN
    FOR r IN SELECT l.id, l.queue, l.group_key, l.previous_id,
                    lead(l.id) OVER (PARTITION BY l.queue, l.group_key ORDER BY l.id) AS next_left
               FROM unnest(left_ids, left_queues, left_groups, left_previous) AS l(id, queue, group_key, previous_id)
              WHERE l.group_key IS NOT NULL
              ORDER BY l.queue, l.group_key, l.id
    LOOP
        IF run_first IS NULL THEN
            run_first := r.id;
            run_previous := r.previous_id;
        END IF;
        -- the first message of the group still in the queue after this one, before the next one that left
        SELECT o.id, o.previous_id INTO successor, successor_previous
          FROM "${flyway:defaultSchema}".message o
         WHERE o.queue = ANY (ARRAY[r.queue]) AND o.group_key = r.group_key
           AND o.id > r.id AND o.id < COALESCE(r.next_left, 9223372036854775807)
         ORDER BY o.queue, o.id LIMIT 1;
        IF successor IS NULL AND r.next_left IS NOT NULL THEN
            CONTINUE; -- the run goes on
        END IF;
        IF successor_previous IS NOT NULL THEN -- null: it tests its whole group already
            older := (SELECT o.id FROM "${flyway:defaultSchema}".message o
                       WHERE o.queue = ANY (ARRAY[r.queue]) AND o.group_key = r.group_key
                         AND o.id < run_first AND o.id >= COALESCE(run_previous, 0)
                       ORDER BY o.queue DESC, o.id DESC LIMIT 1);
            IF older < successor_previous THEN
                UPDATE "${flyway:defaultSchema}".message SET previous_id = older WHERE id = successor;
            END IF;
        END IF;
        run_first := NULL;
    END LOOP;
END
$$;

-- QueueTemplate.cancel: deletes message cancelled of queue of_queue unless a consumer holds it
-- (its advisory key, taken here for the transaction, as before), and mends its group; whether it
-- was deleted. The group is read first, to take its lock, and the DELETE deletes the row only if
-- it is still in that group (its group changes only when it leaves the queue, or by hand: then
-- it is read again).
CREATE FUNCTION "${flyway:defaultSchema}".cancel_message(cancelled bigint, of_queue text, namespace integer)
    RETURNS boolean
    LANGUAGE plpgsql VOLATILE AS
$$
DECLARE
    grp text;
    gone record;
BEGIN
    FOR attempt IN 1..3 LOOP
        SELECT m.group_key INTO grp FROM "${flyway:defaultSchema}".message m
         WHERE m.id = cancelled AND (m.queue = of_queue) IS TRUE;
        IF NOT FOUND THEN
            RETURN false;
        END IF;
        IF grp IS NOT NULL THEN
            PERFORM "${flyway:defaultSchema}".require_read_committed('cancel message ' || cancelled, of_queue, grp);
            PERFORM pg_advisory_xact_lock_shared("${flyway:defaultSchema}".fifo_lock_key(of_queue, '')),
                    pg_advisory_xact_lock("${flyway:defaultSchema}".fifo_lock_key(of_queue, grp));
        END IF;
        DELETE FROM "${flyway:defaultSchema}".message m
         WHERE m.id = cancelled AND (m.queue = of_queue) IS TRUE AND m.group_key IS NOT DISTINCT FROM grp
           AND pg_try_advisory_xact_lock(namespace, m.id::bit(32)::int4)
        RETURNING m.id, m.queue, m.group_key, m.previous_id INTO gone;
        IF gone.id IS NOT NULL THEN
            IF gone.group_key IS NOT NULL THEN
                PERFORM "${flyway:defaultSchema}".leave_groups(ARRAY[gone.id], ARRAY[gone.queue::text],
                                                               ARRAY[gone.group_key], ARRAY[gone.previous_id]);
            END IF;
            RETURN true;
        END IF;
        IF NOT EXISTS (SELECT 1 FROM "${flyway:defaultSchema}".message m
                        WHERE m.id = cancelled AND (m.queue = of_queue) IS TRUE
                          AND m.group_key IS DISTINCT FROM grp) THEN
            RETURN false; -- held, or gone
        END IF;
    END LOOP;
    RETURN false;
END
$$;

-- QueueAdmin.purge, one chunk: locks up to chunk_size messages of of_queue after after_id in id
-- order (all, or only the visible ones), skipping rows a transaction holds, deletes those whose
-- advisory key is free (no session holds them), and mends their groups. Returns the last id it
-- looked at, how many it looked at and how many it deleted. Takes the queue's lock exclusively
-- first (see above): one lock, however many groups the chunk touches.
CREATE FUNCTION "${flyway:defaultSchema}".purge_messages(of_queue text, after_id bigint, everything boolean,
                                                     chunk_size integer, namespace integer,
                                                     OUT last_id bigint, OUT looked bigint, OUT deleted bigint)
    LANGUAGE plpgsql VOLATILE AS
$$
DECLARE
    left_ids bigint[];
    left_groups text[];
    left_previous bigint[];
BEGIN
    PERFORM pg_advisory_xact_lock("${flyway:defaultSchema}".fifo_lock_key(of_queue, ''));
    WITH chunk AS MATERIALIZED (
        SELECT m.id FROM "${flyway:defaultSchema}".message m
         WHERE m.queue = of_queue AND m.id > after_id AND (everything OR m.visible_at <= now())
         ORDER BY m.id LIMIT chunk_size
           FOR UPDATE SKIP LOCKED
    ),
    gone AS (
        DELETE FROM "${flyway:defaultSchema}".message m USING chunk c
         WHERE m.id = c.id AND pg_try_advisory_xact_lock(namespace, c.id::bit(32)::int4)
        RETURNING m.id, m.group_key, m.previous_id
    )
    SELECT (SELECT max(id) FROM chunk), (SELECT count(*) FROM chunk), (SELECT count(*) FROM gone),
           ARRAY(SELECT id FROM gone WHERE group_key IS NOT NULL ORDER BY id),
           ARRAY(SELECT group_key FROM gone WHERE group_key IS NOT NULL ORDER BY id),
           ARRAY(SELECT previous_id FROM gone WHERE group_key IS NOT NULL ORDER BY id)
      INTO last_id, looked, deleted, left_ids, left_groups, left_previous;
    IF cardinality(left_ids) > 0 THEN
        PERFORM "${flyway:defaultSchema}".require_read_committed('purge message ' || left_ids[1], of_queue, left_groups[1]);
        PERFORM "${flyway:defaultSchema}".leave_groups(left_ids, array_fill(of_queue, ARRAY[cardinality(left_ids)]),
                                                       left_groups, left_previous);
    END IF;
END
$$;

-- QueueTemplate.redrive: moves back up to max_moved dead letters of dead_letters that came from
-- target (looking at scan_size of them in id order), parked ones included, as ordinary messages,
-- skipping those a consumer holds (row lock or advisory key, the latter taken here for the
-- transaction); wakes the target's consumers; returns how many. A redriven message keeps its id,
-- and an id is a message's place in its group: a dead letter is older than every message its group
-- received since, so in its group it would overtake them, the one in flight included. So it comes
-- back outside any group, as the dead-letter move leaves it (its group, if it had one, in the
-- header pgqueue-group). If it had one in the dead-letter queue (a grouped message written there),
-- that group is mended, under the dead-letter queue's lock.
CREATE FUNCTION "${flyway:defaultSchema}".redrive_dead_letters(target text, dead_letters text, scan_size integer,
                                                           namespace integer, max_moved integer, channel text)
    RETURNS bigint
    LANGUAGE plpgsql VOLATILE AS
$$
DECLARE
    moved_count bigint;
    left_ids bigint[];
    left_groups text[];
    left_previous bigint[];
BEGIN
    PERFORM pg_advisory_xact_lock("${flyway:defaultSchema}".fifo_lock_key(dead_letters, ''));
    WITH moved AS (
        UPDATE "${flyway:defaultSchema}".message m
           SET queue = target, attempts = 0, visible_at = now(), claim_open = false, previous_id = NULL,
               group_key = NULL,
               headers = m.headers - 'pgqueue-dead-lettered-from' - 'pgqueue-dead-lettered-attempts'
                         || jsonb_strip_nulls(jsonb_build_object('pgqueue-group', m.group_key))
          FROM (SELECT c.id, c.group_key, c.previous_id
                  FROM (SELECT d.id, d.group_key, d.previous_id FROM "${flyway:defaultSchema}".message d
                         WHERE d.queue = dead_letters AND d.headers->>'pgqueue-dead-lettered-from' = target
                         ORDER BY d.id LIMIT scan_size
                         FOR UPDATE SKIP LOCKED) c
                 WHERE pg_try_advisory_xact_lock(namespace, c.id::bit(32)::int4)
                 LIMIT max_moved) l
         WHERE m.id = l.id
        RETURNING m.id, l.group_key, l.previous_id
    )
    SELECT count(*), array_agg(id) FILTER (WHERE group_key IS NOT NULL),
           array_agg(group_key) FILTER (WHERE group_key IS NOT NULL),
           array_agg(previous_id) FILTER (WHERE group_key IS NOT NULL)
      INTO moved_count, left_ids, left_groups, left_previous
      FROM moved;
    IF cardinality(left_ids) > 0 THEN
        PERFORM "${flyway:defaultSchema}".require_read_committed('redrive message ' || left_ids[1], dead_letters,
                                                                 left_groups[1]);
        PERFORM "${flyway:defaultSchema}".leave_groups(left_ids, array_fill(dead_letters, ARRAY[cardinality(left_ids)]),
                                                       left_groups, left_previous);
    END IF;
    IF moved_count > 0 THEN
        PERFORM pg_notify(channel, target);
    END IF;
    RETURN moved_count;
END
$$;

-- The dashboard's redrive of chosen dead letters: each goes back to the queue it came from, as in
-- redrive_dead_letters; returns the ids moved. The dead-letter queues they are in are locked
-- exclusively first, in name order, and a message that moved to another queue meanwhile is left.
CREATE FUNCTION "${flyway:defaultSchema}".redrive_dead_letters_by_id(chosen bigint[], namespace integer, channel text)
    RETURNS SETOF bigint
    LANGUAGE plpgsql VOLATILE AS
$$
DECLARE
    locked text[];
    moved_ids bigint[];
    moved_queues text[];
    left_ids bigint[];
    left_queues text[];
    left_groups text[];
    left_previous bigint[];
BEGIN
    locked := ARRAY(SELECT DISTINCT d.queue::text FROM "${flyway:defaultSchema}".message d
                     WHERE d.id = ANY (chosen) AND jsonb_exists(d.headers, 'pgqueue-dead-lettered-from')
                     ORDER BY 1);
    PERFORM pg_advisory_xact_lock("${flyway:defaultSchema}".fifo_lock_key(q, '')) FROM unnest(locked) AS q;
    WITH moved AS (
        UPDATE "${flyway:defaultSchema}".message m
           SET queue = l.origin, attempts = 0, visible_at = now(), claim_open = false, previous_id = NULL,
               group_key = NULL,
               headers = m.headers - 'pgqueue-dead-lettered-from' - 'pgqueue-dead-lettered-attempts'
                         || jsonb_strip_nulls(jsonb_build_object('pgqueue-group', m.group_key))
          FROM (SELECT c.id, c.origin, c.queue, c.group_key, c.previous_id
                  FROM (SELECT d.id, d.headers->>'pgqueue-dead-lettered-from' AS origin, d.queue, d.group_key,
                               d.previous_id
                          FROM "${flyway:defaultSchema}".message d
                         WHERE d.id = ANY (chosen) AND jsonb_exists(d.headers, 'pgqueue-dead-lettered-from')
                           AND d.queue = ANY (locked)
                         FOR UPDATE SKIP LOCKED) c
                 WHERE pg_try_advisory_xact_lock(namespace, c.id::bit(32)::int4)) l
         WHERE m.id = l.id
        RETURNING m.id, m.queue, l.queue AS left_queue, l.group_key, l.previous_id
    )
    SELECT array_agg(id), array_agg(queue::text),
           array_agg(id) FILTER (WHERE group_key IS NOT NULL),
           array_agg(left_queue::text) FILTER (WHERE group_key IS NOT NULL),
           array_agg(group_key) FILTER (WHERE group_key IS NOT NULL),
           array_agg(previous_id) FILTER (WHERE group_key IS NOT NULL)
      INTO moved_ids, moved_queues, left_ids, left_queues, left_groups, left_previous
      FROM moved;
    IF cardinality(left_ids) > 0 THEN
        PERFORM "${flyway:defaultSchema}".require_read_committed('redrive message ' || left_ids[1], left_queues[1],
                                                                 left_groups[1]);
        PERFORM "${flyway:defaultSchema}".leave_groups(left_ids, left_queues, left_groups, left_previous);
    END IF;
    PERFORM pg_notify(channel, q) FROM (SELECT DISTINCT q FROM unnest(moved_queues) AS q) s;
    RETURN QUERY SELECT unnest(moved_ids);
END
$$;
