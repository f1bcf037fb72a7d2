-- Deploy insurance:roles to pg
-- Roles are cluster-wide: created when missing, shared by every database of the cluster.
--   insurance_owner      owns the schemas and tables; SECURITY DEFINER functions run as it
--   insurance_app        the app's and the worker's login; NOINHERIT, so it holds nothing
--                        until it switches per transaction to one of the surface roles below
--   insurance_cron       the login pg_cron runs this database's jobs as (not a superuser; it
--                        may only EXECUTE the job functions granted to it)
--   insurance_anon       unauthenticated callers (OTP request and verify, gateway authorize)
--   insurance_holder     a policy holder with a post-sales JWT
--   insurance_channel    a partner channel with a gateway JWT
--   insurance_service    integrations, the worker and the retry sweep
--   insurance_dashboard  a back-office user with a dashboard session
-- Another login may play the app's part (a managed PostgreSQL's naming rules, a second
-- deployment): grant it the surface roles as insurance_app has them. The entry points check
-- the role switched to, not the login's name (insurance.require_role).
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';

DO $$
DECLARE
  _role text;
BEGIN
  FOREACH _role IN ARRAY ARRAY['insurance_owner', 'insurance_anon', 'insurance_holder',
                               'insurance_channel', 'insurance_service', 'insurance_dashboard']
  LOOP
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = _role) THEN
      EXECUTE format('CREATE ROLE %I NOLOGIN NOSUPERUSER NOBYPASSRLS', _role);
    END IF;
  END LOOP;
  FOREACH _role IN ARRAY ARRAY['insurance_app', 'insurance_cron'] LOOP
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = _role) THEN
      EXECUTE format('CREATE ROLE %I LOGIN NOINHERIT NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE', _role);
    END IF;
  END LOOP;
  EXECUTE format('GRANT CONNECT, CREATE, TEMPORARY ON DATABASE %I TO insurance_owner', current_database());
  EXECUTE format('GRANT CONNECT ON DATABASE %I TO insurance_app, insurance_cron', current_database());
  -- Nothing waits forever: a held lock or a runaway statement must not stall every surface.
  -- Settings of a role apply when a session logs in as it (SET ROLE does not apply them), so
  -- they are set on the logins, for this database only:
  --   insurance_app   statements 5 s, lock waits 2 s (the app answers 503 DATABASE_BUSY)
  --   insurance_cron  lock waits 2 s, statements 1 min (a purge of a backlog)
  -- Operators (postgres) and migrations keep no limit.
  EXECUTE format('ALTER ROLE insurance_app IN DATABASE %I SET statement_timeout = %L', current_database(), '5s');
  EXECUTE format('ALTER ROLE insurance_app IN DATABASE %I SET lock_timeout = %L', current_database(), '2s');
  EXECUTE format('ALTER ROLE insurance_cron IN DATABASE %I SET statement_timeout = %L', current_database(), '1min');
  EXECUTE format('ALTER ROLE insurance_cron IN DATABASE %I SET lock_timeout = %L', current_database(), '2s');
END
$$;

GRANT insurance_anon, insurance_holder, insurance_channel, insurance_service, insurance_dashboard
   TO insurance_app;

-- /readyz compares the deployed changes with the plan.
GRANT USAGE ON SCHEMA sqitch TO insurance_app;
GRANT SELECT ON sqitch.changes TO insurance_app;

COMMIT;
