-- Recurring messages: a schedule sends a message to a queue (or publishes it to an exchange) at
-- each tick of a cron expression. Every JVM with pgqueue runs the schedules of this table; a tick
-- is sent exactly once however many run it, because the send and the move of next_fire_at from
-- that tick to the next one are one transaction, and the move is a compare-and-set
-- (UPDATE ... WHERE next_fire_at = <the tick>): of two JVMs that race for a tick, the second
-- finds next_fire_at moved and updates no row, so it sends nothing (schedule.sql, fire).
--
-- Next fire times are computed by the JVMs (Spring's CronExpression, in the schedule's zone)
-- and written here; PostgreSQL does not parse cron expressions.
CREATE TABLE "${flyway:defaultSchema}".schedule (
    -- the same rule as queue names
    name          "${flyway:defaultSchema}".queue_name PRIMARY KEY,
    -- six fields (second minute hour day-of-month month day-of-week) or a macro such as @daily
    cron          text NOT NULL,
    -- an IANA zone id (Europe/Paris) or an offset (UTC, +02:00): the zone cron fields are read in
    zone          text NOT NULL DEFAULT 'UTC',
    -- the target: a queue, or an exchange with the routing key to publish with
    queue         "${flyway:defaultSchema}".queue_name,
    exchange      "${flyway:defaultSchema}".queue_name,
    routing_key   text,
    payload       jsonb NOT NULL DEFAULT '{}',
    headers       jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(headers) = 'object'),
    -- what a tick missed while no JVM ran the schedule becomes: one message (for the latest
    -- missed tick), or nothing
    missed        text NOT NULL DEFAULT 'fire-once' CHECK (missed IN ('fire-once', 'skip')),
    -- a paused schedule sends nothing; resuming it starts from its next tick after the resume
    paused        boolean NOT NULL DEFAULT false,
    -- the tick due next: the compare-and-set's value
    next_fire_at  timestamptz NOT NULL,
    -- the tick of the last message sent, and when it was sent
    last_fired_at timestamptz,
    last_sent_at  timestamptz,
    -- messages sent by the schedule since it was created
    fired         bigint NOT NULL DEFAULT 0,
    updated_at    timestamptz NOT NULL DEFAULT now(),
    CHECK ((queue IS NULL) <> (exchange IS NULL)),
    CHECK ((exchange IS NULL) = (routing_key IS NULL))
);

-- The schedulers' one read: the active schedules due soon, earliest first.
CREATE INDEX schedule_due ON "${flyway:defaultSchema}".schedule (next_fire_at) WHERE NOT paused;
