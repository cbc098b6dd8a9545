-- FIFO groups: the messages of one group in one queue are delivered one at a time, in id order.
-- A claim takes a grouped message only if no older message of its group is in the queue (waiting,
-- scheduled, failing and waiting for its retry, or held by a consumer): the group's head.
ALTER TABLE "${flyway:defaultSchema}".message
    ADD COLUMN group_key text CHECK (group_key <> '');

CREATE INDEX message_group_idx
    ON "${flyway:defaultSchema}".message (queue, group_key, id)
    WHERE group_key IS NOT NULL;

-- Ids order a group only if they follow commit order: a message that got a lower id but commits
-- after a higher one of its group was delivered would be a second head. So the inserts of one
-- group are serialized: each takes a transaction lock on the group (single-bigint advisory key:
-- the lock namespace in the high half, a hash of queue and group in the low half) and only then
-- draws its id; a concurrent send to the same group waits until this transaction ends.
CREATE FUNCTION "${flyway:defaultSchema}".order_grouped_insert() RETURNS trigger
    LANGUAGE plpgsql AS
$$
BEGIN
    PERFORM pg_advisory_xact_lock(
        ((SELECT lock_namespace FROM "${flyway:defaultSchema}".setting)::bigint << 32)
        | (hashtext(NEW.queue || E'\n' || NEW.group_key)::bigint & 4294967295));
    NEW.id := nextval(pg_get_serial_sequence(format('%I.message', TG_TABLE_SCHEMA), 'id'));
    RETURN NEW;
END
$$;

CREATE TRIGGER message_grouped_insert
    BEFORE INSERT ON "${flyway:defaultSchema}".message
    FOR EACH ROW WHEN (NEW.group_key IS NOT NULL)
    EXECUTE FUNCTION "${flyway:defaultSchema}".order_grouped_insert();
