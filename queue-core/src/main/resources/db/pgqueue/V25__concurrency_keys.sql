-- Concurrency keys: a queue's definition may name a header (concurrency_key) whose value is each
-- message's key, for claims that take messages round robin across keys (claim_fair), so that one
-- key's backlog does not hold back the others. The sending statements copy the header's value
-- into the message's concurrency_key when the queue names one; a plain SQL INSERT sets it itself.
ALTER TABLE "${flyway:defaultSchema}".queue
    ADD COLUMN concurrency_key text CHECK (concurrency_key <> '');

ALTER TABLE "${flyway:defaultSchema}".message
    ADD COLUMN concurrency_key text CHECK (concurrency_key <> '');

-- The fair claims step from key to key through this index (one descent per key) and read each
-- key's messages in the claim index's order. Partial: a message without a key costs no entry.
CREATE INDEX message_concurrency_idx
    ON "${flyway:defaultSchema}".message (queue, concurrency_key, priority, visible_at, id)
    WHERE concurrency_key IS NOT NULL;

-- The most messages of one key in flight at once across every consumer (null: no limit). A claimed
-- message of a key takes one of that many slots: advisory locks keyed by the lock namespace and a
-- hash of queue, key and slot number (the single-bigint form; the FIFO inserts' keys hash the queue
-- and group without a slot number). A transactional claim takes the slot for its transaction.
ALTER TABLE "${flyway:defaultSchema}".queue
    ADD COLUMN max_in_flight_per_key integer CHECK (max_in_flight_per_key > 0);

-- Takes a free slot of key of_key in queue of_queue, of slots slot numbers, for the calling
-- transaction (xact) or session, and returns the slot's lock key, or null if all are taken. An
-- advisory lock is re-entrant, so a slot the same claim took already (listed in the transaction's
-- setting pgqueue_claim.slots) is passed over: each message a claim takes has a slot of its own.
-- A session claim reads the list at its end, to release those slots once its messages are done.
CREATE FUNCTION "${flyway:defaultSchema}".take_slot(namespace integer, of_queue text, of_key text, slots integer,
                                                    xact boolean)
    RETURNS bigint
    LANGUAGE plpgsql VOLATILE AS
$$
DECLARE
    lock_key bigint;
    taken text := COALESCE(current_setting('pgqueue_claim.slots', true), '');
BEGIN
    FOR slot IN 0 .. slots - 1 LOOP
        lock_key := (namespace::bigint << 32)
                    | (hashtext(of_queue || E'\n' || of_key || E'\n' || slot::text)::bigint & 4294967295);
        CONTINUE WHEN position(',' || lock_key || ',' IN taken) > 0;
        IF (xact AND pg_try_advisory_xact_lock(lock_key)) OR (NOT xact AND pg_try_advisory_lock(lock_key)) THEN
            PERFORM set_config('pgqueue_claim.slots', CASE WHEN taken = '' THEN ',' ELSE taken END || lock_key || ',',
                               true);
            RETURN lock_key;
        END IF;
    END LOOP;
    RETURN NULL;
END
$$;

-- Releases the session slots a claim took (take_slot's lock keys), once its messages are done.
CREATE FUNCTION "${flyway:defaultSchema}".release_slots(lock_keys bigint[])
    RETURNS integer
    LANGUAGE sql VOLATILE AS
$$
    SELECT count(*) FILTER (WHERE pg_advisory_unlock(k))::integer FROM unnest(lock_keys) AS k;
$$;

-- QueueTemplate.sendBatch to a FIFO group (V16), now also copying the key's header into the
-- messages' concurrency key when the queue names one.
CREATE OR REPLACE FUNCTION "${flyway:defaultSchema}".send_batch_to_group(of_queue text, batch_headers jsonb,
                                                                     batch_priority integer, not_before timestamptz,
                                                                     delay_ms bigint, batch_max_attempts integer,
                                                                     of_group text, payloads text[])
    RETURNS SETOF bigint
    LANGUAGE plpgsql VOLATILE AS
$$
DECLARE
    tail bigint := "${flyway:defaultSchema}".group_tail(of_queue, of_group);
    batch_key text := CASE WHEN batch_headers <> '{}'::jsonb
                           THEN batch_headers ->> (SELECT q.concurrency_key FROM "${flyway:defaultSchema}".queue q
                                                    WHERE q.name = of_queue) END;
BEGIN
    RETURN QUERY
    INSERT INTO "${flyway:defaultSchema}".message (id, queue, payload, headers, priority, visible_at, max_attempts,
                                                   group_key, previous_id, concurrency_key)
    SELECT b.id, of_queue, b.payload::jsonb, batch_headers, batch_priority,
           COALESCE(not_before, now() + delay_ms * interval '1 millisecond'), batch_max_attempts, of_group,
           COALESCE(lag(b.id) OVER (ORDER BY b.n), tail), batch_key
      FROM (SELECT nextval("${flyway:defaultSchema}".message_id_sequence()) AS id, p.payload, p.n
              FROM unnest(payloads) WITH ORDINALITY AS p(payload, n)
             ORDER BY p.n) b
     ORDER BY b.n
    RETURNING id;
END
$$;
