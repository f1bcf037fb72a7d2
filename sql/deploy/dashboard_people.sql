-- Deploy insurance:dashboard_people to pg
-- requires: admin_users
-- requires: dashboard
-- The back-office Users page (issue 30): list, disable, enable and end the sessions of
-- back-office users for a live dashboard session, through the command line's admin functions.
-- Reworked after v1.0.0 (issue 42): the page refuses to disable the operator's own account and
-- the last enabled one. Restated whole (CREATE OR REPLACE: it runs over the v1.0.0 functions).
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

-- People from the back-office page (/backoffice/users): the command line's admin.* functions
-- (one home for each change: they end the sessions and write the audit row, refusals included),
-- called as their owner for a live dashboard session, with the session's user as actor and via
-- backoffice. Any back-office user may manage the others, as any operator at the command line.

-- _as_backoffice(): the check every people function starts with; sets the audit rows' via.
CREATE OR REPLACE FUNCTION dashboard._as_backoffice() RETURNS void
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
CREATE OR REPLACE FUNCTION dashboard.list_users() RETURNS jsonb
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
CREATE OR REPLACE FUNCTION dashboard.disable_user(_email text) RETURNS jsonb
LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
DECLARE
  _target insurance.dashboard_users;
BEGIN
  PERFORM insurance.require_role('insurance_dashboard');
  PERFORM dashboard._as_backoffice();
  -- One disable at a time: two operators disabling each other at the same moment would each
  -- see the other enabled, and leave nobody who can log in.
  PERFORM pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtext('dashboard.disable_user'));
  SELECT * INTO _target FROM insurance.dashboard_users u WHERE u.email = pg_catalog.lower(_email);
  IF _target.id::text = insurance.claim('sub') AND _target.email = pg_catalog.lower(insurance.claim('email')) THEN
    RETURN admin._refused(dashboard._actor(), 'users.disable', pg_catalog.jsonb_build_array(_target.email),
                          'OWN_ACCOUNT', 'you cannot disable your own account: another operator can, or the '
                          'command line (python -m app users disable --email E)');
  END IF;
  IF _target.active AND NOT EXISTS (SELECT FROM insurance.dashboard_users u WHERE u.active AND u.id <> _target.id) THEN
    RETURN admin._refused(dashboard._actor(), 'users.disable', pg_catalog.jsonb_build_array(_target.email),
                          'LAST_ENABLED_USER', pg_catalog.format('%s is the last enabled back-office user: nobody '
                          'could log in', _target.email));
  END IF;
  RETURN admin.disable_dashboard_user(dashboard._actor(), _email);
END
$$;
COMMENT ON FUNCTION dashboard.disable_user(text) IS
  'admin.disable_dashboard_user as the session''s user, via backoffice: refuses _email''s login and ends their '
  'sessions; {email, active, sessionsEnded}, or an audited refusal {error, message}: OWN_ACCOUNT (the session''s own '
  'user), LAST_ENABLED_USER (nobody else enabled), USER_NOT_FOUND. One at a time. Dashboard session only.';

CREATE OR REPLACE FUNCTION dashboard.enable_user(_email text) RETURNS jsonb
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

CREATE OR REPLACE FUNCTION dashboard.end_user_sessions(_email text) RETURNS jsonb
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
