-- As V18's, with the same result: a holding row's ids are unnested only when the ids it counts
-- overlap the claimed ones (&&, one comparison a row). With hundreds of consumer sessions, each
-- listing nothing or a few other messages, unnesting every row took most of a quiet queue's claim.
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
                  WHERE (CASE WHEN h.in_turn THEN h.ids[1:1] ELSE h.ids END) && claimed
                    AND i = ANY (claimed) AND h.opened_at > pg_postmaster_start_time());
END
$$;
