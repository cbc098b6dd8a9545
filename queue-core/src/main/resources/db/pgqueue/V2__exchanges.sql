-- Exchanges route one published message to every bound queue whose binding matches the routing
-- key: fanout (every binding), direct (routing key equals the binding's key) or topic (AMQP-style
-- patterns: words separated by '.', '*' is exactly one word, '#' zero or more words).
CREATE TABLE "${flyway:defaultSchema}".exchange (
    name       "${flyway:defaultSchema}".queue_name PRIMARY KEY,
    type       text NOT NULL CHECK (type IN ('fanout', 'direct', 'topic')),
    updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE "${flyway:defaultSchema}".binding (
    exchange    "${flyway:defaultSchema}".queue_name NOT NULL
                REFERENCES "${flyway:defaultSchema}".exchange (name) ON DELETE CASCADE,
    queue       "${flyway:defaultSchema}".queue_name NOT NULL,
    -- the key or pattern as configured; empty for fanout
    routing_key text NOT NULL DEFAULT '',
    -- the pattern as an anchored regular expression, written by pgqueue when the binding is declared
    key_regex   text NOT NULL,
    PRIMARY KEY (exchange, queue, routing_key)
);
