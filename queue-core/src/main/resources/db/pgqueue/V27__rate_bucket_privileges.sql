-- Roles given pgqueue's table privileges (QueueAdmin.grant) before V22 created rate_bucket could
-- not consume a queue with a rate limit: its claims failed with "permission denied for table
-- rate_bucket". They get what QueueAdmin.grant gives on it today, as V26 did for key_rate_bucket.
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
        EXECUTE format('GRANT SELECT, INSERT, UPDATE ON "${flyway:defaultSchema}".rate_bucket TO %I', r.rolname);
    END LOOP;
END
$$;
