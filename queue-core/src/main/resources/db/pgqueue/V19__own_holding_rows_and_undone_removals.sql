-- Consumer sessions of several roles, and removals that roll back.
--
-- 1. A session was taken for dead when its backend was not in pg_stat_activity with a start
--    before its row's. A role without pg_read_all_stats reads other roles' backend_start as null,
--    so every session of role B deleted the live rows of role A, whose deaths then went uncounted.
--    Every role reads every backend's pid: a session is now dead when no backend has its pid with
--    a start time that could be its own (one it may not read counts as its own). A pid taken over
--    by a backend this role cannot see the start of keeps a dead row a little longer; a live
--    session's row is never taken for dead.
-- 2. Any role granted access could write any row: delete what counts a crash, or list messages of
--    a queue it cannot even read so that they look held by the dead. Row-level security now lets a
--    role insert, change and delete only its own session's row (its backend pid, its login), listing
--    only messages its role may consume; every role reads every row. The table's owner is not
--    held by the policies (PostgreSQL's rule), so an application of one role pays nothing for them.
--    What a session writes in other sessions' rows (deleting those of ended sessions, taking out of
--    a dead session's row what a claim has just counted) goes through the functions below, which
--    run as the owner and check what they are asked.
-- 3. In transactional mode a consumer that dies leaves only its aborted transaction in the lock
--    marker (xmax) of the rows it claimed. A cancel, purge or redrive made in a transaction that
--    rolled back leaves the same, and was counted as a consumer's lost attempt: a max-attempts-1
--    message was dead-lettered unread. pgqueue's removals now record their transaction, committed
--    on a connection of its own, before they change a row (QueueTemplate.cancel and redrive,
--    QueueAdmin.purge, the dashboard's redrive); an aborted locker so recorded is not a consumer.

-- The login of the session that inserted the row: with its pid, what makes the row its own. Rows
-- written before this migration get their backend's, so that their sessions keep writing them.
ALTER TABLE "${flyway:defaultSchema}".holding ADD COLUMN login name;
UPDATE "${flyway:defaultSchema}".holding h
   SET login = COALESCE((SELECT a.usename FROM pg_catalog.pg_stat_activity a WHERE a.pid = h.pid), session_user);
ALTER TABLE "${flyway:defaultSchema}".holding
    ALTER COLUMN login SET DEFAULT session_user,
    ALTER COLUMN login SET NOT NULL;

-- Whether role who may list messages ids in its session's holding row: it is above queue access
-- (row-level security on the message table does not hold it), or it may update messages and each
-- id is a message that exists now (one not sent yet, or not committed yet, would have an attempt
-- counted the day it arrives) in a queue it may consume (when it was ever granted queue access;
-- else its table privileges alone decide, see V10). So no role makes a message look held by a
-- dead session unless it could change that message's attempts itself. Messages are looked up by
-- primary key, queue_allowed is asked once per queue. Runs as the owner, which sees every message.
CREATE FUNCTION "${flyway:defaultSchema}".may_hold(ids bigint[], who name) RETURNS boolean
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
    RETURN found = (SELECT count(DISTINCT i) FROM unnest(ids) AS i)
       AND (NOT EXISTS (SELECT 1 FROM "${flyway:defaultSchema}".queue_access a WHERE pg_has_role(who, a.role_oid, 'MEMBER'))
            OR NOT EXISTS (SELECT 1 FROM unnest(queues) AS q WHERE NOT "${flyway:defaultSchema}".queue_allowed(q, true, who)));
END
$$;

-- Whether role who is above queue access: row-level security on the message table does not hold
-- it (a member of its owner's role, a superuser, BYPASSRLS).
CREATE FUNCTION "${flyway:defaultSchema}".bypasses_queue_access(who name) RETURNS boolean
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS
$$
BEGIN
    RETURN pg_has_role(who, (SELECT c.relowner FROM pg_catalog.pg_class c
                              WHERE c.oid = '"${flyway:defaultSchema}".message'::regclass), 'USAGE')
        OR COALESCE((SELECT r.rolbypassrls OR r.rolsuper FROM pg_catalog.pg_roles r WHERE r.rolname = who), false);
END
$$;

ALTER TABLE "${flyway:defaultSchema}".holding ENABLE ROW LEVEL SECURITY;

CREATE POLICY holding_read ON "${flyway:defaultSchema}".holding FOR SELECT USING (true);

CREATE POLICY holding_own_insert ON "${flyway:defaultSchema}".holding FOR INSERT
    WITH CHECK (pid = pg_backend_pid() AND login = session_user
                AND "${flyway:defaultSchema}".may_hold(ids, current_user));

CREATE POLICY holding_own_update ON "${flyway:defaultSchema}".holding FOR UPDATE
    USING (pid = pg_backend_pid() AND login = session_user)
    WITH CHECK (pid = pg_backend_pid() AND login = session_user
                AND "${flyway:defaultSchema}".may_hold(ids, current_user));

CREATE POLICY holding_own_delete ON "${flyway:defaultSchema}".holding FOR DELETE
    USING (pid = pg_backend_pid() AND login = session_user);

-- Deletes the holding rows nobody needs any more, before a session opens its own: of a session
-- opened before the server last started, or of a session that has ended and left no message to
-- count (a session that ends cleanly deletes its own row; one that died keeps it while a message
-- it held is left to be counted: of messages handed out in turn, the first, see V18). Ended: no
-- backend has its pid, or the one that has it started after the row was written. The owner may
-- not read other roles' start times (null): such a backend is taken for the session's own. Rows
-- another session is deleting are skipped, not waited for. How many rows went.
CREATE FUNCTION "${flyway:defaultSchema}".forget_ended_sessions() RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS
$$
DECLARE
    gone integer;
BEGIN
    DELETE FROM "${flyway:defaultSchema}".holding h
     WHERE h.session IN (
           SELECT d.session FROM "${flyway:defaultSchema}".holding d
            WHERE d.opened_at < pg_postmaster_start_time()
               OR (NOT EXISTS (SELECT 1 FROM pg_catalog.pg_stat_activity a
                                WHERE a.pid = d.pid AND (a.backend_start IS NULL OR a.backend_start <= d.opened_at))
                   AND NOT EXISTS (SELECT 1 FROM "${flyway:defaultSchema}".message m
                                    WHERE m.id = ANY (CASE WHEN d.in_turn THEN d.ids[1:1] ELSE d.ids END)))
              FOR UPDATE SKIP LOCKED);
    GET DIAGNOSTICS gone = ROW_COUNT;
    RETURN gone;
END
$$;

-- Takes claimed (suspects a claim has just locked and counted the lost attempt of) out of the rows
-- of the dead sessions that list them; a row of messages handed out in turn whose first is claimed
-- is emptied: the others were never handed to a handler, and must not become its first (V18). Role
-- who (the caller's current_user) must be one the caller may act as, and one that may hold them;
-- a role below queue access must also hold their keys, as the claim that took them does: it
-- cannot take out of a live session's row what that session holds. How many rows changed.
CREATE FUNCTION "${flyway:defaultSchema}".unlist(claimed bigint[], who name) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS
$$
DECLARE
    ns integer := (SELECT s.lock_namespace FROM "${flyway:defaultSchema}".setting s);
    changed integer;
BEGIN
    IF NOT pg_has_role(session_user, who, 'MEMBER') OR NOT "${flyway:defaultSchema}".may_hold(claimed, who)
       OR (NOT "${flyway:defaultSchema}".bypasses_queue_access(who)
           AND EXISTS (SELECT 1 FROM unnest(claimed) AS i
                        WHERE NOT EXISTS (SELECT 1 FROM pg_catalog.pg_locks l
                                           WHERE l.locktype = 'advisory' AND l.pid = pg_backend_pid() AND l.granted
                                             AND l.objsubid = 2 AND l.database = (SELECT d.oid FROM pg_catalog.pg_database d
                                                                                   WHERE d.datname = current_database())
                                             AND l.classid::text::bigint = ns::bigint & 4294967295
                                             AND l.objid::text::bigint = (i::bit(32)::integer)::bigint & 4294967295))) THEN
        RAISE EXCEPTION 'Role % may not take messages % out of other sessions'' holding rows: it may not consume them, '
            'or does not hold them', who, claimed USING ERRCODE = 'insufficient_privilege';
    END IF;
    UPDATE "${flyway:defaultSchema}".holding h
       SET ids = CASE WHEN h.in_turn AND h.ids[1] = ANY (claimed) THEN '{}'::bigint[]
                      ELSE ARRAY(SELECT i FROM unnest(h.ids) WITH ORDINALITY AS t(i, n)
                                  WHERE i <> ALL (claimed) ORDER BY n) END
     WHERE h.ids && claimed;
    GET DIAGNOSTICS changed = ROW_COUNT;
    RETURN changed;
END
$$;

-- The transactions of pgqueue's removals (cancel, purge, redrive), each recorded before it changes
-- a row. Only those that abort matter, and only while a row still carries them: a record goes once
-- its transaction committed or is too old for the commit log (see record_removal).
CREATE TABLE "${flyway:defaultSchema}".removal_xact (
    xact xid8 PRIMARY KEY
);

-- Written and read by the functions below only, which run as the owner.
ALTER TABLE "${flyway:defaultSchema}".removal_xact ENABLE ROW LEVEL SECURITY;

-- Records removal, the running transaction of a removal of the caller's login (called on another
-- connection of that login, which commits before the removal changes a row), and deletes the
-- records that can count no more. A transaction that is not running, or is another login's, is
-- refused: no one records an id before it exists, nor hides another login's consumer's death.
CREATE FUNCTION "${flyway:defaultSchema}".record_removal(removal xid8) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS
$$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_locks l JOIN pg_catalog.pg_stat_activity a ON a.pid = l.pid
                    WHERE l.locktype = 'transactionid' AND l.transactionid = xid(removal) AND l.granted
                      AND l.mode = 'ExclusiveLock' AND a.usename = session_user) THEN
        RAISE EXCEPTION 'Transaction % is not a running transaction of login %: only a running removal of the '
            'same login is recorded', removal, session_user USING ERRCODE = 'invalid_parameter_value';
    END IF;
    DELETE FROM "${flyway:defaultSchema}".removal_xact r
     WHERE pg_xact_status(r.xact) IS DISTINCT FROM 'in progress' AND pg_xact_status(r.xact) IS DISTINCT FROM 'aborted';
    INSERT INTO "${flyway:defaultSchema}".removal_xact (xact) VALUES (removal) ON CONFLICT DO NOTHING;
    RETURN 1;
END
$$;

-- Whether the transaction in a row's xmax, which aborted (the caller tests locker_aborted first,
-- V5), was a consumer's: it is not a recorded removal. The 32-bit xid is widened as locker_aborted
-- does. VOLATILE, so the record is read on a snapshot taken now, after the xmax was found aborted:
-- a removal records its transaction before it changes a row, so this snapshot shows it however
-- old the claim's own snapshot is.
CREATE FUNCTION "${flyway:defaultSchema}".consumer_aborted(locker xid) RETURNS boolean
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS
$$
DECLARE
    x bigint := locker::text::bigint;
    horizon bigint := pg_snapshot_xmax(pg_current_snapshot())::text::bigint;
    epoch bigint := horizon >> 32;
    low bigint := horizon & 4294967295;
BEGIN
    IF x > low AND x - low >= 2147483648 THEN
        epoch := epoch - 1; -- numerically above the horizon yet older: the previous epoch
    ELSIF x < low AND low - x > 2147483648 THEN
        epoch := epoch + 1; -- numerically below the horizon yet newer: the next epoch
    END IF;
    RETURN NOT EXISTS (SELECT 1 FROM "${flyway:defaultSchema}".removal_xact r WHERE r.xact = (epoch << 32 | x)::text::xid8);
END
$$;
