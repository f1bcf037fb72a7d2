-- Deploy insurance:role_timeouts to pg
-- requires: roles
-- requires: cron_role
-- Nothing waits forever: a held lock or a runaway statement must not stall every surface.
-- Settings of a role apply when a session logs in as it (SET ROLE does not apply them), so
-- they are set on the logins, for this database only (roles are shared by the cluster):
--   insurance_app   every app and worker connection: statements 5 s, lock waits 2 s
--                   (the app answers 503 DATABASE_BUSY with Retry-After when one passes)
--   insurance_cron  the pg_cron jobs: lock waits 2 s, statements 1 min (a purge of a backlog)
-- Operators (postgres) and migrations keep no limit.
BEGIN;
DO $$
BEGIN
  EXECUTE format('ALTER ROLE insurance_app IN DATABASE %I SET statement_timeout = %L', current_database(), '5s');
  EXECUTE format('ALTER ROLE insurance_app IN DATABASE %I SET lock_timeout = %L', current_database(), '2s');
  EXECUTE format('ALTER ROLE insurance_cron IN DATABASE %I SET statement_timeout = %L', current_database(), '1min');
  EXECUTE format('ALTER ROLE insurance_cron IN DATABASE %I SET lock_timeout = %L', current_database(), '2s');
END
$$;
COMMIT;
