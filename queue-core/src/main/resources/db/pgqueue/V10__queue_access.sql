-- Per-role access to queues, enforced by PostgreSQL itself (row-level security on the message
-- table), so that a plain SQL client with that role is held to the same rules as pgqueue. The
-- owner of the tables (the role that ran these migrations, normally the application's) is not
-- subject to row-level security and keeps full access; so are superusers. A role that was never
-- granted access to any queue (nor is a member of one that was) is not restricted either: its
-- table privileges alone decide, as before access control existed, so that an application whose
-- migrations ran as another role keeps working. Granting a role access to one queue restricts it
-- to the queues it is granted.
CREATE TABLE "${flyway:defaultSchema}".queue_access (
    queue   "${flyway:defaultSchema}".queue_name NOT NULL,
    role    name    NOT NULL,
    send    boolean NOT NULL DEFAULT false,
    consume boolean NOT NULL DEFAULT false,
    PRIMARY KEY (queue, role)
);

-- Whether role "who" may send to (consume = false) or consume from (consume = true) the queue:
-- it, or a role it is a member of, was granted that, or no queue access was granted to it or its
-- roles at all. Runs as the owner, so roles need no access to queue_access.
CREATE FUNCTION "${flyway:defaultSchema}".queue_allowed(queue text, consume boolean, who name) RETURNS boolean
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog AS
$$
    SELECT EXISTS (SELECT 1 FROM "${flyway:defaultSchema}".queue_access a
                    WHERE a.queue = $1 AND CASE WHEN $2 THEN a.consume ELSE a.send END
                      AND pg_has_role($3, a.role, 'MEMBER'))
        OR NOT EXISTS (SELECT 1 FROM "${flyway:defaultSchema}".queue_access a
                        WHERE pg_has_role($3, a.role, 'MEMBER'))
$$;

ALTER TABLE "${flyway:defaultSchema}".message ENABLE ROW LEVEL SECURITY;

-- Sending: inserting into a queue the role may send to.
CREATE POLICY message_send ON "${flyway:defaultSchema}".message FOR INSERT
    WITH CHECK ("${flyway:defaultSchema}".queue_allowed(queue, false, current_user));

-- Reading: a role that may consume from or send to a queue sees its messages. Senders must: an
-- INSERT ... RETURNING (every send returns the new id) is checked against this policy too, and
-- PostgreSQL has no way to tell a row the role just inserted. Seeing is not taking: claiming,
-- acking and dead-lettering need the right to consume.
CREATE POLICY message_read ON "${flyway:defaultSchema}".message FOR SELECT
    USING ("${flyway:defaultSchema}".queue_allowed(queue, true, current_user)
           OR "${flyway:defaultSchema}".queue_allowed(queue, false, current_user));

-- Consuming: claiming (an UPDATE), acking (a DELETE), retrying; a dead-letter move puts the row
-- into a queue the role may consume from or send to.
CREATE POLICY message_claim ON "${flyway:defaultSchema}".message FOR UPDATE
    USING ("${flyway:defaultSchema}".queue_allowed(queue, true, current_user))
    WITH CHECK ("${flyway:defaultSchema}".queue_allowed(queue, true, current_user)
                OR "${flyway:defaultSchema}".queue_allowed(queue, false, current_user));

CREATE POLICY message_ack ON "${flyway:defaultSchema}".message FOR DELETE
    USING ("${flyway:defaultSchema}".queue_allowed(queue, true, current_user));
