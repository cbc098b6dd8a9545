-- Concurrency keys: a queue's definition may name a header (concurrency_key) whose value is each
-- message's key, for claims that take messages round robin across keys (claim_fair), so that one
-- key's backlog does not hold back the others. The sending statements copy the header's value
-- into the message's concurrency_key when the queue names one; a plain SQL INSERT sets it itself.
ALTER TABLE "${flyway:defaultSchema}".queue
    ADD COLUMN concurrency_key text CHECK (concurrency_key <> '');

ALTER TABLE "${flyway:defaultSchema}".message
    ADD COLUMN concurrency_key text CHECK (concurrency_key <> '');

-- The fair claims step from key to key through this index (one descent per key) and read each
-- key's messages in the claim index's order. Partial: a message without a key costs no entry.
CREATE INDEX message_concurrency_idx
    ON "${flyway:defaultSchema}".message (queue, concurrency_key, priority, visible_at, id)
    WHERE concurrency_key IS NOT NULL;
