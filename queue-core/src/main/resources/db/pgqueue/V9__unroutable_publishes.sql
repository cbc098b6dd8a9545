-- What a publish that matches no binding does: 'drop' (nothing is inserted, the publish returns 0)
-- or 'fail' (the publish fails, rolling back the caller's transaction if it joins one).
ALTER TABLE "${flyway:defaultSchema}".exchange
    ADD COLUMN unroutable text NOT NULL DEFAULT 'drop' CHECK (unroutable IN ('drop', 'fail'));
