-- Messages whose consumer died (orphans) were claimed one per claim statement, so that a message
-- that kills its consumer does not take other orphans with it again and again: 10 000 orphans
-- took 26 s to recover on one consumer. A claim now takes a batch of them and its session hands
-- them out in turn, completing each before it hands over the next. Its holding row lists them in
-- that order, with in_turn set: if the session dies, only the first one listed was handed to a
-- handler (those before it were completed and left the list), so only its attempt is counted; the
-- others were never handed out and are claimable as they are, their consumer's lost attempt
-- already counted by the claim that took them. A message that kills its consumer is still counted
-- once per death, and reaches its max attempts.
--
-- A constant default: the column is added without rewriting the table.
ALTER TABLE "${flyway:defaultSchema}".holding
    ADD COLUMN in_turn boolean NOT NULL DEFAULT false;

-- As V14's, counting only the first listed message of a row whose messages were handed out in turn.
CREATE OR REPLACE FUNCTION "${flyway:defaultSchema}".listed_by_the_dead(claimed bigint[]) RETURNS bigint[]
    LANGUAGE plpgsql VOLATILE AS
$$
BEGIN
    IF cardinality(claimed) = 0 THEN
        RETURN claimed;
    END IF;
    RETURN ARRAY(SELECT DISTINCT i
                   FROM "${flyway:defaultSchema}".holding h
                  CROSS JOIN LATERAL unnest(CASE WHEN h.in_turn THEN h.ids[1:1] ELSE h.ids END) AS i
                  WHERE i = ANY (claimed) AND h.opened_at > pg_postmaster_start_time());
END
$$;

-- queue_access named its roles, and queue_allowed asked pg_has_role about every row's role: once a
-- role that had been granted access was dropped (DROP OWNED BY x; DROP ROLE x), that question
-- failed with 'role "x" does not exist', and with it every other role's send, read and claim. A
-- role is now kept by its oid, as PostgreSQL knows it: pg_has_role answers false for an oid no role
-- has any more, and a new role given a dropped one's name gets nothing of its grants. The name
-- stays, for people reading the table.
ALTER TABLE "${flyway:defaultSchema}".queue_access
    ADD COLUMN role_oid oid;

UPDATE "${flyway:defaultSchema}".queue_access a
   SET role_oid = r.oid
  FROM pg_catalog.pg_roles r
 WHERE r.rolname = a.role;

-- Rows of roles dropped already grant nothing to anyone.
DELETE FROM "${flyway:defaultSchema}".queue_access WHERE role_oid IS NULL;

ALTER TABLE "${flyway:defaultSchema}".queue_access
    ALTER COLUMN role_oid SET NOT NULL,
    DROP CONSTRAINT queue_access_pkey,
    ADD PRIMARY KEY (queue, role_oid);

-- As V10's, asking about role oids.
CREATE OR REPLACE FUNCTION "${flyway:defaultSchema}".queue_allowed(queue text, consume boolean, who name) RETURNS boolean
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog AS
$$
    SELECT EXISTS (SELECT 1 FROM "${flyway:defaultSchema}".queue_access a
                    WHERE a.queue = $1 AND CASE WHEN $2 THEN a.consume ELSE a.send END
                      AND pg_has_role($3, a.role_oid, 'MEMBER'))
        OR NOT EXISTS (SELECT 1 FROM "${flyway:defaultSchema}".queue_access a
                        WHERE pg_has_role($3, a.role_oid, 'MEMBER'))
$$;
