-- Deploy insurance:dashboard_sessions_functions to pg
-- requires: dashboard_users
-- requires: request_claims
-- requires: entry_point_roles
-- Rework: an attempt is counted BEFORE the app verifies the password. login_user() reserves
-- the attempt atomically against the e-mail's and the IP's counters (one upsert, under the
-- rows' locks) and refuses once a limit is reached, so a burst of parallel wrong passwords
-- gets at most 5 evaluations per e-mail per window, whatever the concurrency.
-- login_succeeded() refunds the reservation: it clears the e-mail's counter and gives the
-- IP its attempt back. login_failed() is gone (the attempt is already counted).
-- Every entry point starts with its require_role guard.
BEGIN;
SET LOCAL ROLE insurance_owner;

DROP FUNCTION dashboard.login_failed(text, inet);

-- login_user(email, ip): reserves one attempt for the e-mail and the IP, then answers the
-- active user's id and password hash (NULL when there is none); raises PT429 RATE_LIMITED
-- with HINT {"retryAfter": s} (nothing reserved) when either has no attempt left in its window.
CREATE OR REPLACE FUNCTION dashboard.login_user(_email text, _ip inet) RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = '' AS $$
DECLARE
  _retry_after integer;
BEGIN
  PERFORM insurance.require_role('insurance_anon');
  WITH reserved AS (
    INSERT INTO insurance.dashboard_login_failures AS f (key, failures, window_ends)
    SELECT k.key, 1, pg_catalog.now() + interval '15 minutes' FROM dashboard._login_keys(_email, _ip) k
    ON CONFLICT (key) DO UPDATE
       SET failures    = CASE WHEN f.window_ends > pg_catalog.now() THEN f.failures + 1 ELSE 1 END,
           window_ends = CASE WHEN f.window_ends > pg_catalog.now() THEN f.window_ends
                              ELSE pg_catalog.now() + interval '15 minutes' END
    RETURNING f.key, f.failures, f.window_ends)
  SELECT max(ceil(extract(epoch FROM r.window_ends - pg_catalog.now())))::integer INTO _retry_after
    FROM reserved r JOIN dashboard._login_keys(_email, _ip) k ON k.key = r.key
   WHERE r.failures > k.max_failures;
  IF _retry_after IS NOT NULL THEN
    -- The exception rolls the reservation back: a refused attempt costs nothing.
    RAISE EXCEPTION USING ERRCODE = 'PT429', MESSAGE = 'too many failed logins, try again later',
      DETAIL = 'RATE_LIMITED', HINT = jsonb_build_object('retryAfter', greatest(_retry_after, 1))::text;
  END IF;
  RETURN (SELECT jsonb_build_object('userId', u.id, 'passwordHash', u.password_hash)
            FROM insurance.dashboard_users u
           WHERE u.email = lower(_email) AND u.active);
END
$$;

-- login_succeeded(email, password_hash, token_hash, ttl_seconds, ip, user_agent): opens a session
-- for the active user whose hash the app has just verified (a hash changed meanwhile refuses:
-- PT401 INVALID_CREDENTIALS), refunds the attempt (clears the e-mail's counter, gives the IP
-- its attempt back); {userId, email, expiresAt}.
CREATE OR REPLACE FUNCTION dashboard.login_succeeded(_email text, _password_hash text, _token_hash bytea,
                                          _ttl_seconds integer, _ip inet, _user_agent text) RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = '' AS $$
DECLARE
  _user insurance.dashboard_users;
  _expires_at timestamptz;
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
  _expires_at := pg_catalog.now() + pg_catalog.make_interval(secs => _ttl_seconds);
  INSERT INTO insurance.dashboard_sessions (token_hash, user_id, expires_at, ip, user_agent)
  VALUES (_token_hash, _user.id, _expires_at, _ip, left(_user_agent, 500));
  DELETE FROM insurance.dashboard_login_failures WHERE key = 'email:' || _user.email;
  UPDATE insurance.dashboard_login_failures SET failures = failures - 1
   WHERE key = 'ip:' || pg_catalog.host(_ip) AND failures > 1 AND window_ends > pg_catalog.now();
  -- Sessions ended for a month serve no audit: drop this user's.
  DELETE FROM insurance.dashboard_sessions
   WHERE user_id = _user.id AND coalesce(revoked_at, expires_at) < pg_catalog.now() - interval '30 days';
  RETURN jsonb_build_object('userId', _user.id, 'email', _user.email, 'expiresAt', _expires_at);
END
$$;

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

COMMIT;
