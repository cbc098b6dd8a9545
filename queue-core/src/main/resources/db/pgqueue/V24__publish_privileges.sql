-- A publish reads the exchange's bindings (and, when none matches, the exchange's policy for an
-- unroutable message) before row-level security checks each insert: roles given pgqueue's table
-- privileges before they included these two tables read them too, so a role granted SEND on the
-- bound queues can publish.
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
        EXECUTE format('GRANT SELECT ON "${flyway:defaultSchema}".exchange, "${flyway:defaultSchema}".binding TO %I',
                       r.rolname);
    END LOOP;
END
$$;
