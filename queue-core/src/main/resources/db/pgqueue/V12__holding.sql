-- What each consumer session holds: one row per session, written once per claim and once per
-- completing statement instead of once per message. A session claim writes nothing on the
-- messages it takes; their ids go here. A live session lists only what it holds (its completing
-- statements take the ids out), so a message that a claim could lock and that is still listed
-- here was held by a session that died: the claim counts that lost attempt (on the message,
-- with claim_open set, as before) and takes the id out of the dead session's row.
--
-- Unlogged: nothing here outlives the sessions it describes. A crash of the server empties it,
-- and a session opened before the server last started is no longer counted (as claim_open).
CREATE UNLOGGED TABLE "${flyway:defaultSchema}".holding (
    session bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    pid integer NOT NULL,
    opened_at timestamptz NOT NULL DEFAULT now(),
    ids bigint[] NOT NULL DEFAULT '{}'
) WITH (
    fillfactor = 50,
    autovacuum_vacuum_scale_factor = 0.0,
    autovacuum_vacuum_threshold = 1000,
    autovacuum_vacuum_cost_delay = 0
);

COMMENT ON COLUMN "${flyway:defaultSchema}".message.claim_open IS
    'True while a message that was held by a consumer that died is held again: its holder''s attempt is not counted yet';
