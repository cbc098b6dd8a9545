-- Rate limits per key: a queue whose definition names a concurrency key (V25) may limit each key's
-- messages to rate_limit_per_key_permits per rate_limit_per_key_period_ms, every key on its own,
-- across every consumer. Messages without a key are not limited per key. Both null: no such limit.
ALTER TABLE "${flyway:defaultSchema}".queue
    ADD COLUMN rate_limit_per_key_permits integer CHECK (rate_limit_per_key_permits > 0),
    ADD COLUMN rate_limit_per_key_period_ms integer CHECK (rate_limit_per_key_period_ms > 0),
    ADD CONSTRAINT queue_rate_limit_per_key_whole
        CHECK ((rate_limit_per_key_permits IS NULL) = (rate_limit_per_key_period_ms IS NULL)),
    ADD CONSTRAINT queue_rate_limit_per_key_keyed
        CHECK (rate_limit_per_key_permits IS NULL OR concurrency_key IS NOT NULL);

-- The token bucket of each key of a queue limited per key, as rate_bucket (V22) is each limited
-- queue's: tokens left as of refilled_at, refilled at rate tokens a second up to burst. A consumer
-- takes tokens for the keys that have ready messages before it claims (take_key_tokens, in a short
-- statement of its own), and its claim takes at most that many messages of each key (take_key_turn).
-- Unlogged, as rate_bucket: a crash of the server empties it, and every key starts again with a
-- full bucket. A bucket idle long enough to be full again is the same as none: takes delete such
-- rows a few at a time, so the table holds about the keys active in the last minute.
CREATE UNLOGGED TABLE "${flyway:defaultSchema}".key_rate_bucket (
    queue       "${flyway:defaultSchema}".queue_name,
    key         text NOT NULL,
    rate        double precision NOT NULL CHECK (rate > 0),
    burst       integer NOT NULL CHECK (burst > 0),
    tokens      double precision NOT NULL,
    refilled_at timestamptz NOT NULL,
    granted     integer NOT NULL DEFAULT 0,
    PRIMARY KEY (queue, key)
) WITH (
    fillfactor = 50,
    autovacuum_vacuum_scale_factor = 0.0,
    autovacuum_vacuum_threshold = 1000,
    autovacuum_vacuum_cost_delay = 0
);

-- How many of the tokens its key was granted for this claim (grants, as take_key_turn takes them) a
-- message of key of_key may still take: read before the message is locked, so that a claim locks no
-- message of a key whose tokens are spent (a transaction's lock lasts until it ends).
CREATE FUNCTION "${flyway:defaultSchema}".key_tokens_left(of_key text, grants jsonb)
    RETURNS integer
    LANGUAGE plpgsql VOLATILE AS
$$
DECLARE
    state jsonb := NULLIF(current_setting('pgqueue_claim.grants', true), '')::jsonb;
BEGIN
    IF state IS NULL OR state -> 'claim' IS DISTINCT FROM grants -> 'claim' THEN
        state := grants;
    END IF;
    RETURN COALESCE((state -> 'left' ->> of_key)::integer, 0);
END
$$;

-- A claimed message of key of_key takes its turn: one of the tokens its key was granted for this
-- claim (grants: {"claim": an id of the claim, "left": {key: tokens, ...}}, or null when the queue
-- has no rate limit per key) and one of its key's slots (take_slot, when slots is not null), both
-- or neither. The tokens left are kept in the transaction's setting pgqueue_claim.grants, started
-- from grants at a claim's first call (a claim id differs from the setting's); a claim reads them at
-- its end, and the consumer gives them back to the buckets. False: the message is left alone.
CREATE FUNCTION "${flyway:defaultSchema}".take_key_turn(namespace integer, of_queue text, of_key text,
                                                        slots integer, xact boolean, grants jsonb)
    RETURNS boolean
    LANGUAGE plpgsql VOLATILE AS
$$
DECLARE
    state jsonb;
    left_over integer;
BEGIN
    IF grants IS NOT NULL THEN
        state := NULLIF(current_setting('pgqueue_claim.grants', true), '')::jsonb;
        IF state IS NULL OR state -> 'claim' IS DISTINCT FROM grants -> 'claim' THEN
            state := grants;
        END IF;
        left_over := COALESCE((state -> 'left' ->> of_key)::integer, 0);
        IF left_over <= 0 THEN
            RETURN false;
        END IF;
    END IF;
    IF slots IS NOT NULL AND "${flyway:defaultSchema}".take_slot(namespace, of_queue, of_key, slots, xact) IS NULL THEN
        RETURN false;
    END IF;
    IF grants IS NOT NULL THEN
        PERFORM set_config('pgqueue_claim.grants',
                           jsonb_set(state, ARRAY['left', of_key], to_jsonb(left_over - 1))::text, true);
    END IF;
    RETURN true;
END
$$;

-- Roles given pgqueue's table privileges (QueueAdmin.grant) before this table existed take tokens
-- of its buckets too when they consume a queue limited per key.
DO $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT rolname FROM pg_catalog.pg_roles
              WHERE NOT rolsuper
                AND has_table_privilege(oid, '"${flyway:defaultSchema}".message'::regclass, 'INSERT')
                AND NOT pg_has_role(oid, (SELECT c.relowner FROM pg_catalog.pg_class c
                                           WHERE c.oid = '"${flyway:defaultSchema}".message'::regclass), 'MEMBER')
    LOOP
        EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON "${flyway:defaultSchema}".key_rate_bucket TO %I',
                       r.rolname);
    END LOOP;
END
$$;
