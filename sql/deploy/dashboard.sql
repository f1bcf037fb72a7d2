-- Deploy insurance:dashboard to pg
-- The dashboard schema's shared helper: the actor of an audited back-office action
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

-- _actor(): who is acting, from the session's claims ('dashboard:<email>').
CREATE FUNCTION dashboard._actor() RETURNS text
LANGUAGE sql STABLE SET search_path = '' AS $$
  SELECT 'dashboard:' || coalesce(insurance.claim('email'), 'user-' || insurance.claim('sub'))
$$;
COMMENT ON FUNCTION dashboard._actor() IS
  'Who is acting, from the session''s claims: ''dashboard:<email>''. Dashboard role.';
REVOKE ALL ON FUNCTION dashboard._actor() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dashboard._actor() TO insurance_dashboard;

COMMIT;
