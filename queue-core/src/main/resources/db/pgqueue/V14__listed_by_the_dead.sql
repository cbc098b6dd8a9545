-- Which of the given messages, whose keys the caller has just taken, are still listed in the
-- holding row of a session that died (opened since the server last started): their holder's
-- attempt was never counted. A claim asks this after it has taken the keys, not in its scan.
--
-- The scan judges rows on the statement's snapshot, taken before the walk. A session that claims
-- a message, hands it to a handler and dies in that time (the claim's commit, the handler and the
-- death all after the snapshot, before the walk reaches the row) frees the key, so the walk locks
-- the row, while the snapshot still shows the holder's row without it: the claim took the message
-- as fresh and handed it out again at the same attempt. A crash loop could then go on uncounted.
--
-- VOLATILE and PL/pgSQL on purpose: in READ COMMITTED each query of a volatile function runs on a
-- new snapshot, taken when it is called, after the caller's locks. A key is free only once its
-- holder has ended or its completion has committed (unlock_at_commit), and a holder lists its
-- messages in the statement that claims them and takes them out in the one that completes them,
-- so this snapshot shows the holding row as the holder left it. A SQL function could be inlined
-- into the caller and read the caller's snapshot.
CREATE FUNCTION "${flyway:defaultSchema}".listed_by_the_dead(claimed bigint[]) RETURNS bigint[]
    LANGUAGE plpgsql VOLATILE AS
$$
BEGIN
    IF cardinality(claimed) = 0 THEN
        RETURN claimed;
    END IF;
    RETURN ARRAY(SELECT DISTINCT i
                   FROM "${flyway:defaultSchema}".holding h
                  CROSS JOIN LATERAL unnest(h.ids) AS i
                  WHERE i = ANY (claimed) AND h.opened_at > pg_postmaster_start_time());
END
$$;
