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

