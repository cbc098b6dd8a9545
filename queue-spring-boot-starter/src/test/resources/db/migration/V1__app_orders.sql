-- The application's own first migration: it must keep working next to pgqueue's.
CREATE TABLE app_order (id bigint PRIMARY KEY, item text NOT NULL);
