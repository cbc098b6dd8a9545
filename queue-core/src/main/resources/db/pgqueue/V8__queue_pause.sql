-- A queue can be paused for every consumer in every JVM: claims (listeners and receive) take
-- nothing from it until it is resumed. Sends still go in. The claim tests this once per
-- statement, before it walks the queue.
ALTER TABLE "${flyway:defaultSchema}".queue ADD COLUMN paused boolean NOT NULL DEFAULT false;
