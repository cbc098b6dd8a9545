-- Retention: a queue with a retention keeps each message that completes there (acked, cancelled,
-- purged, or dead-lettered from it) in the archive, with its outcome, for that long.
--
-- The archive is partitioned by range of expiry, one partition per UTC day: a row expires at its
-- completion plus its queue's retention, so a day's partition holds exactly the rows that expire
-- that day, whatever their queues' retentions, and dropping it once the day has passed is one
-- DROP TABLE (archive_upkeep), not a DELETE of rows. The partitions are created ahead, up to the
-- longest retention; a row that finds none (a retention lengthened while no upkeep ran) goes to
-- the default partition, whose expired rows are deleted.
--
-- Rows are written where a message completes, in the same statement, so an ack that rolls back
-- archives nothing: pgqueue's acks and dead-letter moves (both modes; a claim that finds a message
-- out of attempts moves it with the same statement), cancel and purge. No trigger is involved, so
-- a queue without a retention pays one look-up of its definition per ack or dead-letter statement
-- and nothing per row. A plain SQL DELETE archives nothing.
ALTER TABLE "${flyway:defaultSchema}".queue
    ADD COLUMN retention_ms bigint CHECK (retention_ms > 0);

CREATE TABLE "${flyway:defaultSchema}".archive (
    -- the message's id: a message may be archived more than once (dead-lettered, then acked in
    -- the dead-letter queue), by different queues
    id                bigint      NOT NULL,
    -- the queue it completed in
    queue             "${flyway:defaultSchema}".queue_name NOT NULL,
    outcome           text        NOT NULL CHECK (outcome IN ('acked', 'cancelled', 'purged', 'dead-lettered')),
    payload           jsonb       NOT NULL,
    headers           jsonb       NOT NULL,
    priority          integer     NOT NULL,
    attempts          integer     NOT NULL,
    max_attempts      integer,
    group_key         text,
    deduplication_key text,
    last_error        text,
    created_at        timestamptz NOT NULL,
    completed_at      timestamptz NOT NULL DEFAULT now(),
    expires_at        timestamptz NOT NULL
) PARTITION BY RANGE (expires_at);

-- Browsing: a queue's newest completions first; a message by id.
CREATE INDEX archive_queue_idx ON "${flyway:defaultSchema}".archive (queue, completed_at);
CREATE INDEX archive_id_idx ON "${flyway:defaultSchema}".archive (id);

CREATE TABLE "${flyway:defaultSchema}".archive_default PARTITION OF "${flyway:defaultSchema}".archive DEFAULT;

-- A role that may consume from a queue archives what it completes there; a role that may send to
-- or consume from it reads its archive (as its messages, V10).
ALTER TABLE "${flyway:defaultSchema}".archive ENABLE ROW LEVEL SECURITY;

CREATE POLICY archive_write ON "${flyway:defaultSchema}".archive FOR INSERT
    WITH CHECK ("${flyway:defaultSchema}".queue_allowed(queue, true, current_user));

CREATE POLICY archive_read ON "${flyway:defaultSchema}".archive FOR SELECT
    USING ("${flyway:defaultSchema}".queue_allowed(queue, true, current_user)
           OR "${flyway:defaultSchema}".queue_allowed(queue, false, current_user));

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
        EXECUTE format('GRANT SELECT, INSERT ON "${flyway:defaultSchema}".archive TO %I', r.rolname);
    END LOOP;
END
$$;

-- Archives messages just removed by cancel or purge (outcome given), if their queue keeps them.
CREATE FUNCTION "${flyway:defaultSchema}".archive_removed(removed "${flyway:defaultSchema}".message[], how text)
    RETURNS void
    LANGUAGE sql VOLATILE AS
$$
    INSERT INTO "${flyway:defaultSchema}".archive (id, queue, outcome, payload, headers, priority, attempts,
                                                   max_attempts, group_key, deduplication_key, last_error,
                                                   created_at, expires_at)
    SELECT r.id, r.queue, how, r.payload, r.headers, r.priority, r.attempts, r.max_attempts, r.group_key,
           r.deduplication_key, r.last_error, r.created_at, now() + q.retention_ms * interval '1 millisecond'
      FROM unnest(removed) AS r
      JOIN "${flyway:defaultSchema}".queue q ON q.name = r.queue AND q.retention_ms IS NOT NULL
$$;

-- As V16's, and the cancelled message archived and its deduplication key kept (V20), where its
-- queue asks for them.
CREATE OR REPLACE FUNCTION "${flyway:defaultSchema}".cancel_message(cancelled bigint, of_queue text, namespace integer)
    RETURNS boolean
    LANGUAGE plpgsql VOLATILE AS
$$
DECLARE
    grp text;
    gone "${flyway:defaultSchema}".message;
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
        RETURNING m.* INTO gone;
        IF gone.id IS NOT NULL THEN
            IF gone.group_key IS NOT NULL THEN
                PERFORM "${flyway:defaultSchema}".leave_groups(ARRAY[gone.id], ARRAY[gone.queue::text],
                                                               ARRAY[gone.group_key], ARRAY[gone.previous_id]);
            END IF;
            PERFORM "${flyway:defaultSchema}".archive_removed(ARRAY[gone], 'cancelled');
            IF gone.deduplication_key IS NOT NULL THEN
                PERFORM "${flyway:defaultSchema}".keep_keys(ARRAY[gone.queue::text], ARRAY[gone.deduplication_key],
                                                            ARRAY[gone.id]);
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

-- As V16's, and the purged messages archived and their deduplication keys kept (V20), where their
-- queue asks for them.
CREATE OR REPLACE FUNCTION "${flyway:defaultSchema}".purge_messages(of_queue text, after_id bigint, everything boolean,
                                                                chunk_size integer, namespace integer,
                                                                OUT last_id bigint, OUT looked bigint, OUT deleted bigint)
    LANGUAGE plpgsql VOLATILE AS
$$
DECLARE
    left_ids bigint[];
    left_groups text[];
    left_previous bigint[];
    removed "${flyway:defaultSchema}".message[];
    keyed_ids bigint[];
    keyed_keys text[];
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
        RETURNING m.id, m.group_key, m.previous_id, m.deduplication_key, m AS whole
    )
    SELECT (SELECT max(id) FROM chunk), (SELECT count(*) FROM chunk), (SELECT count(*) FROM gone),
           ARRAY(SELECT id FROM gone WHERE group_key IS NOT NULL ORDER BY id),
           ARRAY(SELECT group_key FROM gone WHERE group_key IS NOT NULL ORDER BY id),
           ARRAY(SELECT previous_id FROM gone WHERE group_key IS NOT NULL ORDER BY id),
           CASE WHEN EXISTS (SELECT 1 FROM "${flyway:defaultSchema}".queue q
                              WHERE q.name = of_queue AND q.retention_ms IS NOT NULL)
                THEN ARRAY(SELECT whole FROM gone) END,
           ARRAY(SELECT id FROM gone WHERE deduplication_key IS NOT NULL),
           ARRAY(SELECT deduplication_key FROM gone WHERE deduplication_key IS NOT NULL)
      INTO last_id, looked, deleted, left_ids, left_groups, left_previous, removed, keyed_ids, keyed_keys;
    IF cardinality(left_ids) > 0 THEN
        PERFORM "${flyway:defaultSchema}".require_read_committed('purge message ' || left_ids[1], of_queue, left_groups[1]);
        PERFORM "${flyway:defaultSchema}".leave_groups(left_ids, array_fill(of_queue, ARRAY[cardinality(left_ids)]),
                                                       left_groups, left_previous);
    END IF;
    IF cardinality(removed) > 0 THEN
        PERFORM "${flyway:defaultSchema}".archive_removed(removed, 'purged');
    END IF;
    IF cardinality(keyed_ids) > 0 THEN
        PERFORM "${flyway:defaultSchema}".keep_keys(array_fill(of_queue, ARRAY[cardinality(keyed_ids)]), keyed_keys,
                                                    keyed_ids);
    END IF;
END
$$;

-- The archive's upkeep as of time "at": creates the day partitions from at's day up to the day
-- the longest retention reaches, and one more, and drops the partitions whose day has passed; the
-- default partition's expired rows are deleted. A day that already has rows in the default
-- partition gets no partition of its own (creating it would fail). One process at a time (the
-- others return at once); a DROP that would wait more than a second for the acks archiving into
-- the table gives up, to be tried at the next upkeep. Runs as the owner, which may create and drop
-- tables. Returns the number of partitions created and dropped.
CREATE FUNCTION "${flyway:defaultSchema}".archive_upkeep(at timestamptz, OUT created integer, OUT dropped integer)
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp SET lock_timeout = '1s' AS
$$
DECLARE
    today timestamptz := date_trunc('day', at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC';
    last_day timestamptz;
    day timestamptz;
    p record;
BEGIN
    created := 0;
    dropped := 0;
    IF NOT pg_try_advisory_xact_lock("${flyway:defaultSchema}".lock_namespace_key()
                                     | (hashtext('archive upkeep')::bigint & 4294967295)) THEN
        RETURN;
    END IF;
    last_day := today + (SELECT max(q.retention_ms) FROM "${flyway:defaultSchema}".queue q) * interval '1 millisecond'
                + interval '1 day';
    day := today;
    WHILE day <= last_day LOOP
        IF to_regclass(format('%I.%I', '${flyway:defaultSchema}',
                              'archive_' || to_char(day AT TIME ZONE 'UTC', 'YYYYMMDD'))) IS NULL
           AND NOT EXISTS (SELECT 1 FROM "${flyway:defaultSchema}".archive_default d
                            WHERE d.expires_at >= day AND d.expires_at < day + interval '1 day') THEN
            EXECUTE format('CREATE TABLE %I.%I PARTITION OF %I.archive FOR VALUES FROM (%L) TO (%L)',
                           '${flyway:defaultSchema}', 'archive_' || to_char(day AT TIME ZONE 'UTC', 'YYYYMMDD'),
                           '${flyway:defaultSchema}', day, day + interval '1 day');
            created := created + 1;
        END IF;
        day := day + interval '1 day';
    END LOOP;
    FOR p IN SELECT c.relname FROM pg_catalog.pg_inherits i
               JOIN pg_catalog.pg_class c ON c.oid = i.inhrelid
              WHERE i.inhparent = '"${flyway:defaultSchema}".archive'::regclass
                AND c.relname ~ '^archive_[0-9]{8}$'
                AND (to_date(substr(c.relname, 9), 'YYYYMMDD')::timestamp AT TIME ZONE 'UTC') + interval '1 day' <= at
    LOOP
        EXECUTE format('DROP TABLE %I.%I', '${flyway:defaultSchema}', p.relname);
        dropped := dropped + 1;
    END LOOP;
    DELETE FROM "${flyway:defaultSchema}".archive_default d WHERE d.expires_at <= at;
END
$$;
