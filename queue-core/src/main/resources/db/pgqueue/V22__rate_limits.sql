-- Rate limits: a queue's limit is part of its policy (table queue), so that every consumer of
-- every JVM and language applies the same one: at most rate_limit_permits messages handed out per
-- rate_limit_period_ms (1 000: per second, 60 000: per minute), both null for a queue without one.
ALTER TABLE "${flyway:defaultSchema}".queue
    ADD COLUMN rate_limit_permits integer CHECK (rate_limit_permits > 0),
    ADD COLUMN rate_limit_period_ms integer CHECK (rate_limit_period_ms > 0),
    ADD CONSTRAINT queue_rate_limit_whole
        CHECK ((rate_limit_permits IS NULL) = (rate_limit_period_ms IS NULL));

-- The token bucket of each limited queue, shared by all its consumers: tokens left as of
-- refilled_at, refilled at rate tokens a second up to burst, and what the last take granted (the
-- take is one upsert, which returns the row it wrote; see limits.sql). A consumer takes tokens
-- before it claims, under this row's lock, and claims at most what it was granted.
--
-- Unlogged: a take writes its row, and that costs no WAL. A crash of the server, or a failover,
-- empties the table; the next take of each queue creates its row again with a full bucket (one
-- burst more than the limit, once). Not tied to the queue table by a foreign key: a row of a
-- queue dropped is only ever read again if the queue is declared again with a limit.
CREATE UNLOGGED TABLE "${flyway:defaultSchema}".rate_bucket (
    queue       "${flyway:defaultSchema}".queue_name PRIMARY KEY,
    rate        double precision NOT NULL CHECK (rate > 0),
    burst       integer NOT NULL CHECK (burst > 0),
    tokens      double precision NOT NULL,
    refilled_at timestamptz NOT NULL,
    granted     integer NOT NULL DEFAULT 0
) WITH (
    fillfactor = 50,
    autovacuum_vacuum_scale_factor = 0.0,
    autovacuum_vacuum_threshold = 1000,
    autovacuum_vacuum_cost_delay = 0
);
