-- The lock namespace, the first int4 of every advisory-lock key, fixed when the schema is
-- created and read by every process from here, so that two processes can never use different
-- key spaces for the same messages (a differing property, a table re-created under a new oid).
-- The placeholder lockNamespace is pgqueue.lock-namespace, or empty for the message table's oid.
CREATE TABLE "${flyway:defaultSchema}".setting (
    only_row       boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    lock_namespace integer NOT NULL
);
INSERT INTO "${flyway:defaultSchema}".setting (lock_namespace)
SELECT COALESCE(NULLIF('${lockNamespace}', '')::integer,
                '"${flyway:defaultSchema}".message'::regclass::oid::integer);

-- The dead-letter queue of a queue that names none: <queue>.dlq, or, when that would pass 63
-- characters, the first 50 characters, a hash of the whole name and .dlq, so that two long names
-- never share one and no name is its own. QueueNames.defaultDeadLetterQueue computes the same.
CREATE FUNCTION "${flyway:defaultSchema}".default_dead_letter_queue(queue text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS
$$
    SELECT CASE WHEN length(queue) <= 59 THEN queue || '.dlq'
                ELSE left(queue, 50) || '-' || left(md5(queue), 8) || '.dlq' END
$$;

-- When the open claim was taken. A claim still open from before the server last started did not
-- end because its message killed a consumer (the server went away under every consumer at once),
-- so after a restart such messages are claimed in batches again, not one at a time.
ALTER TABLE "${flyway:defaultSchema}".message ADD COLUMN claimed_at timestamptz;
