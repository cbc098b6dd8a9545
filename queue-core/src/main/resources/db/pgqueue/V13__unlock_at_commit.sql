-- A session consumer holds a message by a session-level advisory lock, and its completing
-- statement (ack, retry, dead letter, release) unlocks it per row, before that statement commits.
-- Another consumer's claim running in that gap could lock the row while its snapshot still showed
-- it, then wait for the completion in its re-check and find the row gone. Correct, but in a busy
-- queue the head is where the other consumers' batches are being completed: a claim from the head
-- filled its batch with such rows, came back empty and sent its poller to sleep in the middle of a
-- drain. A completion now hands its session lock over to a transaction-level lock on the same key
-- (granted at once: this backend holds the key) and releases the session lock: the key stays taken
-- until the completion commits or rolls back, so a claim skips the row as held, and once the
-- completion has committed no new snapshot shows it. Returns what pg_advisory_unlock returns
-- (false, with its warning, when this session did not hold the key).
CREATE FUNCTION "${flyway:defaultSchema}".unlock_at_commit(namespace integer, key integer) RETURNS boolean
    LANGUAGE sql VOLATILE AS
$$
    SELECT pg_try_advisory_xact_lock(namespace, key);
    SELECT pg_advisory_unlock(namespace, key);
$$;
