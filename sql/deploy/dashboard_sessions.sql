-- Deploy insurance:dashboard_sessions to pg
-- Dashboard login, sessions and failed-login limits; the session resolved inside the procedure's
-- statement. CREATE OR REPLACE: it runs over the released functions.
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

-- _login_keys(email, ip): the counter keys of one attempt, with their limits.
CREATE OR REPLACE FUNCTION dashboard._login_keys(_email text, _ip inet, OUT key text, OUT max_failures integer)
RETURNS SETOF record
LANGUAGE sql IMMUTABLE SET search_path = '' AS $$
  SELECT 'email+ip:' || lower(_email) || '|' || coalesce(pg_catalog.host(_ip), '-'), 5
  UNION ALL
  SELECT 'ip:' || pg_catalog.host(_ip), 50 WHERE _ip IS NOT NULL
  UNION ALL
  SELECT 'email:' || lower(_email), 100
$$;
COMMENT ON FUNCTION dashboard._login_keys(text, inet) IS
  'The failed-login counter keys of one attempt with their limits: email+ip:<e-mail>|<address> 5, '
  'ip:<address> 50, email:<e-mail> 100 (the account-wide ceiling). Login functions only.';
REVOKE ALL ON FUNCTION dashboard._login_keys(text, inet) FROM PUBLIC;

-- Device tokens (docs/security.md "Devices", OWASP device cookies): the app verifies a device
-- token's signature and hands its (user id, device generation) to the login functions; the
-- exemption holds only while they name this e-mail's active user at its current generation
-- (insurance.dashboard_users.device_generation, bumped by admin._end_sessions: disable, a new
-- password, ended sessions). An exempt attempt meets the (e-mail, address) and address limits
-- as any other, and neither reads nor counts the e-mail's ceiling.

-- _device_known(email, user_id, generation): whether a device proof names this e-mail's active
-- user at its current device generation.
CREATE OR REPLACE FUNCTION dashboard._device_known(_email text, _user_id bigint, _generation integer)
RETURNS boolean
LANGUAGE sql STABLE SET search_path = '' AS $$
  SELECT EXISTS (SELECT FROM insurance.dashboard_users u
                  WHERE u.id = _user_id AND u.email = pg_catalog.lower(_email) AND u.active
                    AND u.device_generation = _generation)
$$;
COMMENT ON FUNCTION dashboard._device_known(text, bigint, integer) IS
  'Whether the device proof (_user_id, _generation) names the active user of _email at its current device '
  'generation (false for NULLs). Login functions only.';
REVOKE ALL ON FUNCTION dashboard._device_known(text, bigint, integer) FROM PUBLIC;

-- login_user(email, ip, device_user, device_generation): reserves one attempt against every
-- counter of _login_keys (but the e-mail's ceiling for a known device, see above), then answers
-- the user's id, password hash and whether it is active (NULL when there is none), or
-- {"error": "RATE_LIMITED", "retryAfter": s} (nothing reserved) when a counter has no attempt
-- left in its window. An answer rather than an exception, so that a ceiling's trip is recorded.
CREATE OR REPLACE FUNCTION dashboard.login_user(_email text, _ip inet, _device_user bigint,
                                                _device_generation integer) RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = '' AS $$
DECLARE
  _retry_after integer;
  _ceiling     timestamptz;  -- the end of the account's window when its ceiling refused
  _device      boolean;      -- a known device: the e-mail's ceiling is not this attempt's
BEGIN
  PERFORM insurance.require_role('insurance_anon');
  _device := dashboard._device_known(_email, _device_user, _device_generation);
  BEGIN
    WITH keys AS (
      SELECT k.key, k.max_failures FROM dashboard._login_keys(_email, _ip) k
       WHERE NOT (_device AND k.key LIKE 'email:%')),
    reserved AS (
      INSERT INTO insurance.dashboard_login_failures AS f (key, failures, window_ends)
      SELECT k.key, 1, pg_catalog.now() + interval '15 minutes' FROM keys k
      ON CONFLICT (key) DO UPDATE
         SET failures    = CASE WHEN f.window_ends > pg_catalog.now() THEN f.failures + 1 ELSE 1 END,
             window_ends = CASE WHEN f.window_ends > pg_catalog.now() THEN f.window_ends
                                ELSE pg_catalog.now() + interval '15 minutes' END
      RETURNING f.key, f.failures, f.window_ends)
    SELECT max(ceil(extract(epoch FROM r.window_ends - pg_catalog.now())))::integer,
           max(r.window_ends) FILTER (WHERE r.key LIKE 'email:%')
      INTO _retry_after, _ceiling
      FROM reserved r JOIN keys k ON k.key = r.key
     WHERE r.failures > k.max_failures;
    IF _retry_after IS NOT NULL THEN
      -- Leaving the block by an exception undoes the reservation: a refused attempt costs nothing.
      RAISE EXCEPTION USING ERRCODE = 'PT429';
    END IF;
  EXCEPTION WHEN SQLSTATE 'PT429' THEN
    IF _ceiling IS NOT NULL THEN
      PERFORM insurance._report_account_ceiling('dashboard_login', lower(_email), 100, _ceiling);
    END IF;
    RETURN jsonb_build_object('error', 'RATE_LIMITED', 'retryAfter', greatest(_retry_after, 1));
  END;
  -- A disabled user too (active false): the app says so only once the password is verified,
  -- and login_succeeded opens no session for it.
  RETURN (SELECT jsonb_build_object('userId', u.id, 'passwordHash', u.password_hash, 'active', u.active)
            FROM insurance.dashboard_users u
           WHERE u.email = lower(_email));
END
$$;
COMMENT ON FUNCTION dashboard.login_user(text, inet, bigint, integer) IS
  'Reserves one login attempt for the (e-mail, address), the address and the e-mail (_login_keys; not '
  'the e-mail''s ceiling when (_device_user, _device_generation) is a known device of the account), then '
  'returns {userId, passwordHash, active} of the user (NULL when none; a disabled one: active false), or '
  '{error: RATE_LIMITED, retryAfter} when one of them is out of attempts (nothing reserved; the account-wide '
  'ceiling''s trip is audited and counted). Anonymous role.';

-- login_user(email, ip): the same without a device (the earlier signature, kept for callers that
-- send none).
CREATE OR REPLACE FUNCTION dashboard.login_user(_email text, _ip inet) RETURNS jsonb
LANGUAGE sql VOLATILE SET search_path = '' AS $$
  SELECT insurance.require_role('insurance_anon');
  SELECT dashboard.login_user(_email, _ip, NULL, NULL)
$$;
COMMENT ON FUNCTION dashboard.login_user(text, inet) IS
  'dashboard.login_user(_email, _ip, NULL, NULL): a login attempt without a device. Anonymous role.';

-- login_succeeded(email, password_hash, token_hash, ttl_seconds, ip, user_agent, device_user,
-- device_generation): opens a session for the active user whose hash the app has just verified
-- (a hash changed meanwhile refuses: PT401 INVALID_CREDENTIALS), refunds the attempt (clears its
-- (e-mail, address) counter, gives the address and, unless a known device spent none of it, the
-- e-mail their attempt back); {userId, email, expiresAt, deviceGeneration} (what the new device
-- token carries).
CREATE OR REPLACE FUNCTION dashboard.login_succeeded(_email text, _password_hash text, _token_hash bytea,
                                                     _ttl_seconds integer, _ip inet, _user_agent text,
                                                     _device_user bigint, _device_generation integer)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = '' AS $$
DECLARE
  _user insurance.dashboard_users;
  _expires_at timestamptz;
  _device boolean;
BEGIN
  PERFORM insurance.require_role('insurance_anon');
  IF _ttl_seconds IS NULL OR _ttl_seconds NOT BETWEEN 60 AND 30 * 86400 THEN
    RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = 'session lifetime must be between 1 minute and 30 days';
  END IF;
  SELECT * INTO _user FROM insurance.dashboard_users u
   WHERE u.email = lower(_email) AND u.active AND u.password_hash = _password_hash;
  IF NOT FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'PT401', MESSAGE = 'invalid e-mail or password', DETAIL = 'INVALID_CREDENTIALS';
  END IF;
  _device := dashboard._device_known(_email, _device_user, _device_generation);
  _expires_at := pg_catalog.now() + pg_catalog.make_interval(secs => _ttl_seconds);
  INSERT INTO insurance.dashboard_sessions (token_hash, user_id, expires_at, ip, user_agent)
  VALUES (_token_hash, _user.id, _expires_at, _ip, left(_user_agent, 500));
  DELETE FROM insurance.dashboard_login_failures
   WHERE key = 'email+ip:' || _user.email || '|' || coalesce(pg_catalog.host(_ip), '-');
  UPDATE insurance.dashboard_login_failures SET failures = failures - 1
   WHERE (key = 'ip:' || pg_catalog.host(_ip) OR (key = 'email:' || _user.email AND NOT _device))
     AND failures > 1 AND window_ends > pg_catalog.now();
  -- Sessions ended for a month serve no audit: drop this user's.
  DELETE FROM insurance.dashboard_sessions
   WHERE user_id = _user.id AND coalesce(revoked_at, expires_at) < pg_catalog.now() - interval '30 days';
  RETURN jsonb_build_object('userId', _user.id, 'email', _user.email, 'expiresAt', _expires_at,
                            'deviceGeneration', _user.device_generation);
END
$$;
COMMENT ON FUNCTION dashboard.login_succeeded(text, text, bytea, integer, inet, text, bigint, integer) IS
  'Opens a session (token hash, ttl 60 s..30 days) for the active user whose hash the app has just '
  'verified and refunds the attempt (not the e-mail''s, which a known device did not spend); returns '
  '{userId, email, expiresAt, deviceGeneration}; raises PT401 INVALID_CREDENTIALS when the hash changed '
  'meanwhile, 22023 for a bad ttl. Anonymous role.';

-- login_succeeded(email, password_hash, token_hash, ttl_seconds, ip, user_agent): the same
-- without a device (the earlier signature).
CREATE OR REPLACE FUNCTION dashboard.login_succeeded(_email text, _password_hash text, _token_hash bytea,
                                                     _ttl_seconds integer, _ip inet, _user_agent text)
RETURNS jsonb
LANGUAGE sql VOLATILE SET search_path = '' AS $$
  SELECT insurance.require_role('insurance_anon');
  SELECT dashboard.login_succeeded(_email, _password_hash, _token_hash, _ttl_seconds, _ip, _user_agent, NULL, NULL)
$$;
COMMENT ON FUNCTION dashboard.login_succeeded(text, text, bytea, integer, inet, text) IS
  'dashboard.login_succeeded(..., NULL, NULL): a successful login without a device. Anonymous role.';

REVOKE ALL ON FUNCTION dashboard.login_user(text, inet, bigint, integer),
  dashboard.login_succeeded(text, text, bytea, integer, inet, text, bigint, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dashboard.login_user(text, inet, bigint, integer),
  dashboard.login_succeeded(text, text, bytea, integer, inet, text, bigint, integer) TO insurance_anon, insurance_app;

-- session_claims(token_hash): the claims of a live session ({sub, email, role}), or NULL when
-- the session is unknown, expired or revoked, or its user is deactivated.
CREATE OR REPLACE FUNCTION dashboard.session_claims(_token_hash bytea) RETURNS jsonb
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = '' AS $$
  SELECT insurance.require_role('insurance_anon');
  SELECT jsonb_build_object('sub', u.id::text, 'email', u.email, 'role', 'dashboard',
                            'sessionExpiresAt', s.expires_at)
    FROM insurance.dashboard_sessions s
    JOIN insurance.dashboard_users u ON u.id = s.user_id
   WHERE s.token_hash = _token_hash AND s.revoked_at IS NULL AND s.expires_at > pg_catalog.now()
     AND u.active
$$;
COMMENT ON FUNCTION dashboard.session_claims(bytea) IS
  'The claims {sub, email, role, sessionExpiresAt} of the live session with this token hash, or NULL '
  '(unknown, expired, revoked, user inactive). Anonymous role.';

-- logout(token_hash): revokes the session; true when a live session was revoked.
CREATE OR REPLACE FUNCTION dashboard.logout(_token_hash bytea) RETURNS boolean
LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = '' AS $$
  SELECT insurance.require_role('insurance_anon');
  WITH revoked AS (
    UPDATE insurance.dashboard_sessions SET revoked_at = pg_catalog.now()
     WHERE token_hash = _token_hash AND revoked_at IS NULL AND expires_at > pg_catalog.now()
    RETURNING 1)
  SELECT EXISTS (SELECT FROM revoked)
$$;
COMMENT ON FUNCTION dashboard.logout(bytea) IS
  'Revokes the session with this token hash; true when a live session was revoked. Anonymous role.';
REVOKE ALL ON FUNCTION dashboard.login_user(text, inet) FROM PUBLIC;
REVOKE ALL ON FUNCTION dashboard.login_succeeded(text, text, bytea, integer, inet, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION dashboard.session_claims(bytea) FROM PUBLIC;
REVOKE ALL ON FUNCTION dashboard.logout(bytea) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dashboard.login_user(text, inet) TO insurance_anon, insurance_app;
GRANT EXECUTE ON FUNCTION dashboard.login_succeeded(text, text, bytea, integer, inet, text) TO insurance_anon, insurance_app;
GRANT EXECUTE ON FUNCTION dashboard.session_claims(bytea) TO insurance_anon, insurance_app;
GRANT EXECUTE ON FUNCTION dashboard.logout(bytea) TO insurance_anon, insurance_app;

-- A tRPC procedure in one round trip: app/db.py's call_in_session resolves the session cookie
-- inside the procedure's own statement, where the claims are set:
--   SELECT dashboard.list_emissions(...) FROM (SELECT set_config('role', 'insurance_dashboard', true),
--     set_config('request.jwt.claims', dashboard.session_claims_or_deny($2), true) OFFSET 0) AS _auth

-- session_claims_or_deny(token_hash): the claims (JSON text) of a live dashboard session, as
-- dashboard.session_claims builds them (that one is the anonymous role's, and this runs after
-- the switch to insurance_dashboard); PT401 UNAUTHORIZED when the session is unknown, expired
-- or revoked, or its user is deactivated.
CREATE OR REPLACE FUNCTION dashboard.session_claims_or_deny(_token_hash bytea) RETURNS text
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = '' AS $$
DECLARE
  _claims jsonb;
BEGIN
  -- Every tRPC query runs this first: the switched role is compared here, require_role (a call
  -- with its own SET clause) only decides for any other caller.
  IF pg_catalog.current_setting('role') <> 'insurance_dashboard' THEN
    PERFORM insurance.require_role('insurance_dashboard');
  END IF;
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
COMMENT ON FUNCTION dashboard.session_claims_or_deny(bytea) IS
  'The claims (JSON text) of the live session with this token hash, resolved inside the tRPC call''s '
  'own statement; raises PT401 UNAUTHORIZED otherwise. Dashboard role.';
REVOKE ALL ON FUNCTION dashboard.session_claims_or_deny(bytea) FROM PUBLIC;
-- insurance_app: EXECUTE is checked against the login when the statement starts.
GRANT EXECUTE ON FUNCTION dashboard.session_claims_or_deny(bytea) TO insurance_dashboard, insurance_app;
COMMIT;
