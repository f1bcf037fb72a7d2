-- Deploy insurance:dashboard_people to pg
-- requires: admin_users
-- requires: dashboard
-- The back-office Users page (issue 30): list, disable, enable and end the sessions of
-- back-office users for a live dashboard session, through the command line's admin functions.
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

-- People from the back-office page (/backoffice/users): the command line's admin.* functions
-- (one home for each change: they end the sessions and write the audit row, refusals included),
-- called as their owner for a live dashboard session, with the session's user as actor and via
-- backoffice. Any back-office user may manage the others, as any operator at the command line.

-- _as_backoffice(): the check every people function starts with; sets the audit rows' via.
CREATE FUNCTION dashboard._as_backoffice() RETURNS void
LANGUAGE plpgsql SET search_path = '' AS $$
BEGIN
  IF insurance.claim('role') IS DISTINCT FROM 'dashboard' OR insurance.claim('sub') IS NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'PT401', MESSAGE = 'a dashboard session is required', DETAIL = 'UNAUTHORIZED';
  END IF;
  PERFORM pg_catalog.set_config('insurance.audit_via', 'backoffice', true);
  PERFORM pg_catalog.set_config('insurance.audit_on_behalf_of', '', true);
END
$$;
COMMENT ON FUNCTION dashboard._as_backoffice() IS
  'Raises PT401 UNAUTHORIZED without a dashboard session''s claims; else marks the transaction''s audit rows via '
  'backoffice. Helper of the people functions.';
REVOKE ALL ON FUNCTION dashboard._as_backoffice() FROM PUBLIC;

-- list_users(): every back-office user with its state and live sessions (never a hash).
CREATE FUNCTION dashboard.list_users() RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = '' AS $$
BEGIN
  PERFORM insurance.require_role('insurance_dashboard');
  RETURN coalesce((
    SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
             'id', u.id, 'email', u.email, 'active', u.active, 'createdAt', u.created_at,
             'liveSessions', (SELECT pg_catalog.count(*) FROM insurance.dashboard_sessions s
                               WHERE s.user_id = u.id AND s.revoked_at IS NULL AND s.expires_at > pg_catalog.now()))
           ORDER BY u.email)
      FROM insurance.dashboard_users u), '[]');
END
$$;
COMMENT ON FUNCTION dashboard.list_users() IS
  'Every back-office user by e-mail: [{id, email, active, createdAt, liveSessions}] (never a hash). Dashboard role.';

-- disable_user(email), enable_user(email), end_user_sessions(email): the command line's
-- disable, enable and sessions --end-all, as the session's user, via backoffice.
CREATE FUNCTION dashboard.disable_user(_email text) RETURNS jsonb
LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
BEGIN
  PERFORM insurance.require_role('insurance_dashboard');
  PERFORM dashboard._as_backoffice();
  RETURN admin.disable_dashboard_user(dashboard._actor(), _email);
END
$$;
COMMENT ON FUNCTION dashboard.disable_user(text) IS
  'admin.disable_dashboard_user as the session''s user, via backoffice: refuses _email''s login and ends their '
  'sessions; {email, active, sessionsEnded} or the audited refusal {error: USER_NOT_FOUND, message}. Dashboard session only.';

CREATE FUNCTION dashboard.enable_user(_email text) RETURNS jsonb
LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
BEGIN
  PERFORM insurance.require_role('insurance_dashboard');
  PERFORM dashboard._as_backoffice();
  RETURN admin.enable_dashboard_user(dashboard._actor(), _email);
END
$$;
COMMENT ON FUNCTION dashboard.enable_user(text) IS
  'admin.enable_dashboard_user as the session''s user, via backoffice: _email may log in again; {email, active} or '
  'the audited refusal {error: USER_NOT_FOUND, message}. Dashboard session only.';

CREATE FUNCTION dashboard.end_user_sessions(_email text) RETURNS jsonb
LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
BEGIN
  PERFORM insurance.require_role('insurance_dashboard');
  PERFORM dashboard._as_backoffice();
  RETURN admin.end_dashboard_sessions(dashboard._actor(), _email, NULL);
END
$$;
COMMENT ON FUNCTION dashboard.end_user_sessions(text) IS
  'admin.end_dashboard_sessions (every live one) as the session''s user, via backoffice: {email, sessionsEnded} or '
  'the audited refusal {error: USER_NOT_FOUND, message}. Dashboard session only.';

REVOKE ALL ON FUNCTION dashboard.list_users() FROM PUBLIC;
REVOKE ALL ON FUNCTION dashboard.disable_user(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION dashboard.enable_user(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION dashboard.end_user_sessions(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dashboard.list_users() TO insurance_dashboard, insurance_app;
GRANT EXECUTE ON FUNCTION dashboard.disable_user(text) TO insurance_dashboard, insurance_app;
GRANT EXECUTE ON FUNCTION dashboard.enable_user(text) TO insurance_dashboard, insurance_app;
GRANT EXECUTE ON FUNCTION dashboard.end_user_sessions(text) TO insurance_dashboard, insurance_app;

COMMIT;
