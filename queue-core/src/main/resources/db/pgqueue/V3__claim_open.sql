-- True from the moment a consumer claims a message until it acks, retries, dead-letters or
-- releases it. A claimable row (no lock held) that still says true was held by a consumer that
-- died: the next claim takes such a message alone, so that a message that kills its consumer
-- burns its own attempts only, not those of the messages claimed with it.
ALTER TABLE "${flyway:defaultSchema}".message ADD COLUMN claim_open boolean NOT NULL DEFAULT false;
