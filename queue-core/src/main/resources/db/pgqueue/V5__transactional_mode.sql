-- Transactional mode claims messages with FOR UPDATE SKIP LOCKED inside the transaction that runs
-- the handler, and deletes them there: nothing is written before the handler runs. What survives a
-- consumer that died mid-transaction is the row lock it left: the row's xmax names a transaction
-- that never committed. A claim that finds such a row counts that attempt durably before handing
-- the message out again (alone), so a message that kills its consumer still reaches max_attempts.

-- Whether the transaction in a row's xmax (a 32-bit xid) aborted: the xid is widened to the
-- 64-bit form pg_xact_status takes with the epoch of the current snapshot's horizon, comparing
-- modulo 2^32 as PostgreSQL does (a live xid is within 2^31 of it, before or after). A locker
-- that began after the snapshot counts too: a claim reads the row's lock marker live, so a
-- consumer that died while the claim ran is still seen as such. False for a row no transaction
-- locked or changed (xmax 0), a locker still running, one that committed, and one too old for
-- the commit log to know.
CREATE FUNCTION "${flyway:defaultSchema}".locker_aborted(locker xid) RETURNS boolean
    LANGUAGE sql STABLE PARALLEL SAFE AS
$$
    SELECT CASE
               WHEN x < 3 THEN false -- no locker, or a special xid
               WHEN epoch = 0 AND x > low AND x - low >= 2147483648 THEN false -- before the first epoch
               ELSE COALESCE(pg_xact_status(((epoch + CASE
                                  -- numerically above the horizon yet older: the previous epoch
                                  WHEN x > low AND x - low >= 2147483648 THEN -1
                                  -- numerically below the horizon yet newer: the next epoch
                                  WHEN x < low AND low - x > 2147483648 THEN 1
                                  ELSE 0 END) << 32 | x)::text::xid8) = 'aborted', false)
           END
      FROM (SELECT locker::text::bigint AS x,
                   pg_snapshot_xmax(pg_current_snapshot())::text::bigint >> 32 AS epoch,
                   pg_snapshot_xmax(pg_current_snapshot())::text::bigint & 4294967295 AS low) s
$$;
