-- Each holding row names the queue of the messages it lists, and a claim reads only the rows of
-- its own queue, through an index. Every claim asks which messages the consumer sessions list: to
-- leave out those of sessions that died, and to find which of the ones it locked a dead session
-- listed (listed_by_the_dead). It read every session's row for that, twice; with hundreds of
-- sessions, nearly all on other queues, that was most of a quiet queue's claim, and the rows'
-- pages stayed as many as the busiest moment had left them.
--
-- A session holds the messages of one claim at a time, so of one queue: the claim that lists them
-- writes their queue with them, and the statements that complete them only take ids out. The
-- row of a session that serves one queue keeps its updates HOT; a session that serves several (a
-- listener of a list of queues) writes another queue when its claims switch, and those updates add
-- index entries, as any change of an indexed column does. A row opened by this
-- version says '' until its session's first claim; a row without a queue (null) was opened by an
-- earlier version, whose claims do not write one, and every claim reads those, so that during an
-- upgrade the versions still count each other's lost attempts.
--
-- A message moved to another queue while a dead session lists it (a redrive, a move of dead
-- letters) is no longer that session's lost attempt there: the move starts it over (attempts = 0,
-- claim_open = false, V16), and now its listing no longer follows it either. The listing stays
-- until the message is gone or a claim of the queue it names finds the message again (one moved
-- back there: that claim counts the dead session's attempt then, and takes it out).
ALTER TABLE "${flyway:defaultSchema}".holding ADD COLUMN queue text;

CREATE INDEX holding_queue ON "${flyway:defaultSchema}".holding (queue);

-- As V28's, for the rows of one queue and those without a queue.
CREATE FUNCTION "${flyway:defaultSchema}".listed_by_the_dead(of_queue text, claimed bigint[]) RETURNS bigint[]
    LANGUAGE plpgsql VOLATILE AS
$$
BEGIN
    IF cardinality(claimed) = 0 THEN
        RETURN claimed;
    END IF;
    RETURN ARRAY(SELECT DISTINCT i
                   FROM "${flyway:defaultSchema}".holding h
                  CROSS JOIN LATERAL (SELECT CASE WHEN h.in_turn THEN h.ids[1:1] ELSE h.ids END AS ids) counted
                  CROSS JOIN LATERAL unnest(counted.ids) AS i
                  WHERE (h.queue = of_queue OR h.queue IS NULL) AND counted.ids && claimed
                    AND i = ANY (claimed) AND h.opened_at > pg_postmaster_start_time());
END
$$;
