-- Deploy insurance:roles to pg
-- Roles are cluster-wide: created when missing, shared by every database of the cluster.
--   insurance_owner      owns the schemas and tables; SECURITY DEFINER functions run as it
--   insurance_app        the only login; NOINHERIT, so it holds nothing until it switches
--                        per transaction to one of the surface roles below
--   insurance_anon       unauthenticated callers (OTP request and verify, gateway authorize)
--   insurance_holder     a policy holder with a post-sales JWT
--   insurance_channel    a partner channel with a gateway JWT
--   insurance_service    integrations, the worker and the retry sweep
--   insurance_dashboard  a back-office user with a dashboard session
BEGIN;

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
  IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = 'insurance_app') THEN
    CREATE ROLE insurance_app LOGIN NOINHERIT NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE;
  END IF;
  EXECUTE format('GRANT CONNECT, CREATE, TEMPORARY ON DATABASE %I TO insurance_owner', current_database());
  EXECUTE format('GRANT CONNECT ON DATABASE %I TO insurance_app', current_database());
END
$$;

GRANT insurance_anon, insurance_holder, insurance_channel, insurance_service, insurance_dashboard
   TO insurance_app;

-- /readyz compares the deployed changes with the plan.
GRANT USAGE ON SCHEMA sqitch TO insurance_app;
GRANT SELECT ON sqitch.changes TO insurance_app;

COMMIT;
