-- A grouped message's head test looks for an older message of its group in the queue, backwards
-- from the message through the group index. Each acked message of the group leaves an entry there
-- until its deletion is visible to every transaction and hinted on the heap (with asynchronous
-- commit, until the WAL writer has flushed it), and the test stepped over every such entry with a
-- heap fetch: most of what a grouped claim cost. previous_id is the id of the newest message of
-- the group when this one was inserted; the head test looks no lower than it.
--
-- Sound because a group's messages are completed in id order: the test finds previous_id's row
-- as long as it is in the queue, and once it is gone it was completed as its group's head, when
-- no older message of the group was in the queue; none can come back (grouped inserts draw their
-- ids in commit order, see V7). A previous_id that misses a message between it and this one (the
-- sender's snapshot did not show it yet) only makes the test look at more entries. Null when the
-- group had no message, and for messages moved to another queue by a redrive: the whole group is
-- tested then.
ALTER TABLE "${flyway:defaultSchema}".message
    ADD COLUMN previous_id bigint;

UPDATE "${flyway:defaultSchema}".message m
   SET previous_id = p.previous_id
  FROM (SELECT id, lag(id) OVER (PARTITION BY queue, group_key ORDER BY id) AS previous_id
          FROM "${flyway:defaultSchema}".message
         WHERE group_key IS NOT NULL) p
 WHERE m.id = p.id AND p.previous_id IS NOT NULL;

-- As V7's, and the group's newest message, under the group's lock: every earlier insert of the
-- group has committed or is this transaction's (rows inserted before by the same statement are
-- visible to a row trigger's queries). Its plan is cached, perhaps made on an empty table, where a
-- sequential scan is cheapest; it must stay one descent of the group index however large the
-- queue grows.
CREATE OR REPLACE FUNCTION "${flyway:defaultSchema}".order_grouped_insert() RETURNS trigger
    LANGUAGE plpgsql SET enable_seqscan = off AS
$$
BEGIN
    PERFORM pg_advisory_xact_lock(
        ((SELECT lock_namespace FROM "${flyway:defaultSchema}".setting)::bigint << 32)
        | (hashtext(NEW.queue || E'\n' || NEW.group_key)::bigint & 4294967295));
    NEW.id := nextval(pg_get_serial_sequence(format('%I.message', TG_TABLE_SCHEMA), 'id'));
    NEW.previous_id := (SELECT max(o.id) FROM "${flyway:defaultSchema}".message o
                         WHERE o.queue = NEW.queue AND o.group_key = NEW.group_key);
    RETURN NEW;
END
$$;
