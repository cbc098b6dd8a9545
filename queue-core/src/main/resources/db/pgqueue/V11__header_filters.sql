-- Header filters (@QueueListener(filter = ...), receive(queue, filter, type)): a filter is a list of
-- JSON objects, and a message matches when its headers contain one of them (headers @> ANY (...)).
-- This index answers that containment, so a claim with a selective filter reads the matching
-- messages only, not every message ahead of them in the claim index. jsonb_path_ops: one hashed
-- entry per header (path and value), smaller and faster than the default operator class, and @>
-- is the only operator the filters use. The claim's attempts update leaves headers alone, so it
-- stays a HOT update. Partial: a filter names at least one header, so a message without headers
-- never matches, and sending one (the common case) costs no index entry.
CREATE INDEX message_headers_idx
    ON "${flyway:defaultSchema}".message USING gin (headers jsonb_path_ops)
    WHERE headers <> '{}'::jsonb;
