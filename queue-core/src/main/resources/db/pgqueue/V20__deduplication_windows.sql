-- Deduplication windows. A deduplication key (V6) is refused while its message is in the queue; a
-- queue with a window also refuses it for that long after the message completed: acked, cancelled,
-- purged or dead-lettered (a dead letter leaves its key behind, V6).
--
-- A windowed queue's keys are rows of deduplication_key, one per queue and key: kept_until is null
-- while the key's message is in the queue and is set when it completes. A send takes the key by
-- inserting its row, or by taking over a row whose kept_until has passed, in one INSERT ... ON
-- CONFLICT DO UPDATE ... WHERE kept_until < now(): a send that finds the row kept is refused, and
-- a send racing another for a free key waits on the other's row (its insert, or its lock on the
-- expired row) and then finds it kept, or free again if the other rolled back. So two messages of
-- one key in a window are impossible by construction, whatever the timing. The message table's
-- unique index keeps doing what it did for queues without a window.
ALTER TABLE "${flyway:defaultSchema}".queue
    ADD COLUMN deduplication_window_ms bigint CHECK (deduplication_window_ms > 0);

CREATE TABLE "${flyway:defaultSchema}".deduplication_key (
    queue      "${flyway:defaultSchema}".queue_name NOT NULL,
    key        text        NOT NULL,
    -- the message that has (or had) the key: a refused send returns its id
    message_id bigint      NOT NULL,
    -- null while the message is in the queue; the key is free again from this time on
    kept_until timestamptz,
    PRIMARY KEY (queue, key)
);

-- Expired keys are deleted a few at a time by the completions that keep new ones (keep_key), found
-- through this index, so that the table holds about the keys of one window and is never scanned.
CREATE INDEX deduplication_key_expiry_idx
    ON "${flyway:defaultSchema}".deduplication_key (kept_until)
    WHERE kept_until IS NOT NULL;

-- The keys of a queue are read under the same rule as its messages (V10): a refused send reads
-- the kept message's id. Only the functions below, which run as the owner, write them.
ALTER TABLE "${flyway:defaultSchema}".deduplication_key ENABLE ROW LEVEL SECURITY;

CREATE POLICY deduplication_key_read ON "${flyway:defaultSchema}".deduplication_key FOR SELECT
    USING ("${flyway:defaultSchema}".queue_allowed(queue, true, current_user)
           OR "${flyway:defaultSchema}".queue_allowed(queue, false, current_user));

-- Roles that were given pgqueue's table privileges before this table existed read it too.
DO $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT rolname FROM pg_catalog.pg_roles
              WHERE NOT rolsuper
                AND has_table_privilege(oid, '"${flyway:defaultSchema}".message'::regclass, 'INSERT')
                AND NOT pg_has_role(oid, (SELECT c.relowner FROM pg_catalog.pg_class c
                                           WHERE c.oid = '"${flyway:defaultSchema}".message'::regclass), 'MEMBER')
    LOOP
        EXECUTE format('GRANT SELECT ON "${flyway:defaultSchema}".deduplication_key TO %I', r.rolname);
    END LOOP;
END
$$;

-- Before a message with a key is inserted into a windowed queue: takes the key, or skips the row
-- (returns null) when the key is kept, so that the insert inserts nothing, as a conflict on the
-- message table's unique index does. Runs after message_grouped_insert (triggers fire in name
-- order), which may draw the row's id. Queues without a window pay one look-up of their
-- definition per keyed message.
CREATE FUNCTION "${flyway:defaultSchema}".take_key() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS
$$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM "${flyway:defaultSchema}".queue q
                    WHERE q.name = NEW.queue AND q.deduplication_window_ms IS NOT NULL) THEN
        RETURN NEW;
    END IF;
    INSERT INTO "${flyway:defaultSchema}".deduplication_key AS k (queue, key, message_id, kept_until)
    VALUES (NEW.queue, NEW.deduplication_key, NEW.id, NULL)
    ON CONFLICT (queue, key) DO UPDATE SET message_id = excluded.message_id, kept_until = NULL
     WHERE k.kept_until < now();
    IF FOUND THEN
        RETURN NEW;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER message_key_taken
    BEFORE INSERT ON "${flyway:defaultSchema}".message
    FOR EACH ROW WHEN (NEW.deduplication_key IS NOT NULL)
    EXECUTE FUNCTION "${flyway:defaultSchema}".take_key();

-- Keeps the keys of messages that have just left their queue, a queue with a window (queue, key
-- and id of each, as they were; a null key is passed over), for the window from now. A message
-- sent before its queue got a window has no row: it gets one. Then deletes up to two expired keys
-- per key kept, so that each kept key pays for the ones that expire. Called by the statements that
-- complete messages (acks, dead-letter moves, which clear the key, V6, cancel and purge), only
-- when the queue has a window: no trigger watches deletions or updates, so that claims, retries
-- and acks of the other queues pay nothing per row. A plain SQL DELETE keeps no key. Its plans are
-- cached, perhaps made on an empty table: they must stay index scans however large the table
-- grows. One queue holds a key once (the message table's unique index), so no row is upserted
-- twice. Runs as the owner: roles read the keys only.
CREATE FUNCTION "${flyway:defaultSchema}".keep_keys(left_queues text[], left_keys text[], left_ids bigint[])
    RETURNS integer
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp SET enable_seqscan = off AS
$$
DECLARE
    kept integer;
BEGIN
    INSERT INTO "${flyway:defaultSchema}".deduplication_key AS k (queue, key, message_id, kept_until)
    SELECT l.queue, l.key, l.id, now() + q.deduplication_window_ms * interval '1 millisecond'
      FROM unnest(left_queues, left_keys, left_ids) AS l(queue, key, id)
      JOIN "${flyway:defaultSchema}".queue q ON q.name = l.queue AND q.deduplication_window_ms IS NOT NULL
     WHERE l.key IS NOT NULL
    ON CONFLICT (queue, key) DO UPDATE SET message_id = excluded.message_id, kept_until = excluded.kept_until;
    GET DIAGNOSTICS kept = ROW_COUNT;
    IF kept > 0 THEN
        DELETE FROM "${flyway:defaultSchema}".deduplication_key k
         WHERE (k.queue, k.key) IN (SELECT e.queue, e.key FROM "${flyway:defaultSchema}".deduplication_key e
                                     WHERE e.kept_until < now()
                                     ORDER BY e.kept_until LIMIT 2 * kept FOR UPDATE SKIP LOCKED);
    END IF;
    RETURN kept;
END
$$;
