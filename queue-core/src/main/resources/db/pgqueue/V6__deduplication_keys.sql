-- Deduplication keys: while a message with a key is in its queue (waiting, scheduled or held by a
-- consumer), a send with the same key to the same queue inserts nothing and gets the existing
-- message's id. The key leaves with the message: acked (deleted) or dead-lettered (the move to the
-- dead-letter queue clears it, so dead letters of one key never collide there).
ALTER TABLE "${flyway:defaultSchema}".message
    ADD COLUMN deduplication_key text CHECK (deduplication_key <> '');

CREATE UNIQUE INDEX message_deduplication_idx
    ON "${flyway:defaultSchema}".message (queue, deduplication_key)
    WHERE deduplication_key IS NOT NULL;
