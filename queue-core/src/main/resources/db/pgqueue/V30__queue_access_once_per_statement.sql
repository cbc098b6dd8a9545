-- The row-level security policies of V10, V20 and V23 asked queue_allowed about every row a
-- restricted role's statement read or wrote. It is a SECURITY DEFINER function with its own
-- search_path, which PostgreSQL cannot inline: every row paid a function call with its switch of
-- user and search_path and a run of its query: a claim of 100 messages and their ack took 2.8
-- times as long as the same statements run by the tables' owner, and a claim of 10 1.8 times.
--
-- The policies now ask queues_allowed once per statement (an uncorrelated subquery, which
-- PostgreSQL runs once, before the scan) which queues the role may use, and test each row's queue
-- against that list. Who may do what is unchanged: a role that was never granted access to any
-- queue, nor is a member of a role that was, gets null, which the policies read as no restriction;
-- any other role gets the queues it, or a role it is a member of, was granted the right to consume
-- from (to_consume) or send to (to_send). queue_allowed stays: a session's claim asks it once,
-- about its own queue.
-- One read of the grants: null when none is the role's, else the queues of those that allow
-- what is asked (none: an empty list). plpgsql keeps the query's plan for the session, where an
-- SQL function that is not inlined would plan it at every call.
CREATE FUNCTION "${flyway:defaultSchema}".queues_allowed(to_consume boolean, to_send boolean, who name) RETURNS text[]
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS
$$
BEGIN
    RETURN (SELECT CASE WHEN count(*) > 0
                        THEN COALESCE(array_agg(DISTINCT a.queue::text)
                                          FILTER (WHERE (to_consume AND a.consume) OR (to_send AND a.send)), '{}')
                   END
              FROM "${flyway:defaultSchema}".queue_access a
             WHERE pg_has_role(who, a.role_oid, 'MEMBER'));
END
$$;

-- Sending: inserting into a queue the role may send to.
ALTER POLICY message_send ON "${flyway:defaultSchema}".message
    WITH CHECK (queue::text = ANY (COALESCE((SELECT "${flyway:defaultSchema}".queues_allowed(false, true, current_user)),
                                            ARRAY[queue::text])));

-- Reading: a role that may consume from or send to a queue sees its messages (see V10).
ALTER POLICY message_read ON "${flyway:defaultSchema}".message
    USING (queue::text = ANY (COALESCE((SELECT "${flyway:defaultSchema}".queues_allowed(true, true, current_user)),
                                       ARRAY[queue::text])));

-- Consuming: claiming, acking, retrying; a dead-letter move puts the row into a queue the role may
-- consume from or send to.
ALTER POLICY message_claim ON "${flyway:defaultSchema}".message
    USING (queue::text = ANY (COALESCE((SELECT "${flyway:defaultSchema}".queues_allowed(true, false, current_user)),
                                       ARRAY[queue::text])))
    WITH CHECK (queue::text = ANY (COALESCE((SELECT "${flyway:defaultSchema}".queues_allowed(true, true, current_user)),
                                            ARRAY[queue::text])));

ALTER POLICY message_ack ON "${flyway:defaultSchema}".message
    USING (queue::text = ANY (COALESCE((SELECT "${flyway:defaultSchema}".queues_allowed(true, false, current_user)),
                                       ARRAY[queue::text])));

-- The archive and the kept keys, as V23 and V20: read by the roles that may read the queue's
-- messages, archived into by the ones that may consume them.
ALTER POLICY archive_read ON "${flyway:defaultSchema}".archive
    USING (queue::text = ANY (COALESCE((SELECT "${flyway:defaultSchema}".queues_allowed(true, true, current_user)),
                                       ARRAY[queue::text])));

ALTER POLICY archive_write ON "${flyway:defaultSchema}".archive
    WITH CHECK (queue::text = ANY (COALESCE((SELECT "${flyway:defaultSchema}".queues_allowed(true, false, current_user)),
                                            ARRAY[queue::text])));

ALTER POLICY deduplication_key_read ON "${flyway:defaultSchema}".deduplication_key
    USING (queue::text = ANY (COALESCE((SELECT "${flyway:defaultSchema}".queues_allowed(true, true, current_user)),
                                       ARRAY[queue::text])));

-- As V19's, asking queues_allowed once where queue_allowed was asked once per queue (each call of
-- which, from here, planned its query again): a session's claim writes its holding row, which
-- checks this, so a restricted role's session claims paid it on every batch.
CREATE OR REPLACE FUNCTION "${flyway:defaultSchema}".may_hold(ids bigint[], who name) RETURNS boolean
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS
$$
DECLARE
    found bigint;
    queues text[];
BEGIN
    IF cardinality(ids) IS NULL OR cardinality(ids) = 0 OR "${flyway:defaultSchema}".bypasses_queue_access(who) THEN
        RETURN true;
    END IF;
    IF NOT has_table_privilege(who, '"${flyway:defaultSchema}".message'::regclass, 'UPDATE') THEN
        RETURN false;
    END IF;
    SELECT count(*), array_agg(DISTINCT m.queue::text) INTO found, queues
      FROM "${flyway:defaultSchema}".message m WHERE m.id = ANY (ids);
    -- queues is null only when no id is a message (ids of nulls, which count as none).
    RETURN found = (SELECT count(DISTINCT i) FROM unnest(ids) AS i)
       AND (queues IS NULL OR queues <@ COALESCE("${flyway:defaultSchema}".queues_allowed(true, false, who), queues));
END
$$;
