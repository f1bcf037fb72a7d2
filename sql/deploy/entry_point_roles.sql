-- Deploy insurance:entry_point_roles to pg
-- requires: schemas
-- EXECUTE on an entry point is checked against the login (insurance_app) when the statement
-- starts, before app/db.py's set_config('role', ...) has switched to the surface role. So
-- every SECURITY DEFINER entry point names the roles it is meant for and checks the switched
-- role itself, first thing:  PERFORM insurance.require_role('insurance_holder');
BEGIN;
SET LOCAL ROLE insurance_owner;

-- require_role: raise 42501 when the app's login calls under a role not in _allowed.
-- Only the app's login is held to it: operators (psql as postgres, pg_cron's role, pgTAP)
-- call entry points directly and are trusted.
CREATE FUNCTION insurance.require_role(VARIADIC _allowed text[])
RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = ''
AS $$
BEGIN
  IF session_user = 'insurance_app' AND current_setting('role') <> ALL (_allowed) THEN
    RAISE insufficient_privilege
      USING MESSAGE = format('role %s may not call this entry point', current_setting('role'));
  END IF;
END
$$;
-- Every role reaches it from the entry points it guards; it reveals nothing.
GRANT EXECUTE ON FUNCTION insurance.require_role(text[]) TO PUBLIC;

COMMIT;
