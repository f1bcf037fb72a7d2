-- Deploy insurance:dashboard_session_in_statement to pg
-- requires: dashboard_sessions_functions
-- requires: entry_point_roles
-- A tRPC procedure in one round trip: app/db.py's call_in_session resolves the session cookie
-- inside the procedure's own statement, where the claims are set:
--   SELECT dashboard.list_emissions(...) FROM (SELECT set_config('role', 'insurance_dashboard', true),
--     set_config('request.jwt.claims', dashboard.session_claims_or_deny($2), true) OFFSET 0) AS _auth
BEGIN;
SET LOCAL ROLE insurance_owner;

-- session_claims_or_deny(token_hash): the claims (JSON text) of a live dashboard session, as
-- dashboard.session_claims builds them (that one is the anonymous role's, and this runs after
-- the switch to insurance_dashboard); PT401 UNAUTHORIZED when the session is unknown, expired
-- or revoked, or its user is deactivated.
CREATE FUNCTION dashboard.session_claims_or_deny(_token_hash bytea) RETURNS text
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = '' AS $$
DECLARE
  _claims jsonb;
BEGIN
  PERFORM insurance.require_role('insurance_dashboard');
  SELECT jsonb_build_object('sub', u.id::text, 'email', u.email, 'role', 'dashboard',
                            'sessionExpiresAt', s.expires_at)
    INTO _claims
    FROM insurance.dashboard_sessions s
    JOIN insurance.dashboard_users u ON u.id = s.user_id
   WHERE s.token_hash = _token_hash AND s.revoked_at IS NULL AND s.expires_at > pg_catalog.now()
     AND u.active;
  IF _claims IS NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'PT401', MESSAGE = 'A valid dashboard session is required',
                          DETAIL = 'UNAUTHORIZED';
  END IF;
  RETURN _claims::text;
END
$$;

REVOKE ALL ON FUNCTION dashboard.session_claims_or_deny(bytea) FROM PUBLIC;
-- insurance_app: EXECUTE is checked against the login when the statement starts.
GRANT EXECUTE ON FUNCTION dashboard.session_claims_or_deny(bytea) TO insurance_dashboard, insurance_app;

COMMIT;
