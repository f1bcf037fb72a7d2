-- Revert insurance:dashboard_sessions_functions from pg: the @v1.0 functions (count after verify)
BEGIN;
SET LOCAL ROLE insurance_owner;

-- login_user(email, ip): the active user's id and password hash (NULL when there is none);
-- raises PT429 RATE_LIMITED with HINT {"retryAfter": s} while the e-mail or the IP is locked out.
CREATE OR REPLACE FUNCTION dashboard.login_user(_email text, _ip inet) RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = '' AS $$
DECLARE
  _retry_after integer;
BEGIN
  SELECT max(ceil(extract(epoch FROM f.window_ends - pg_catalog.now())))::integer INTO _retry_after
    FROM insurance.dashboard_login_failures f
    JOIN dashboard._login_keys(_email, _ip) k ON k.key = f.key
   WHERE f.window_ends > pg_catalog.now() AND f.failures >= k.max_failures;
  IF _retry_after IS NOT NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'PT429', MESSAGE = 'too many failed logins, try again later',
      DETAIL = 'RATE_LIMITED', HINT = jsonb_build_object('retryAfter', greatest(_retry_after, 1))::text;
  END IF;
  RETURN (SELECT jsonb_build_object('userId', u.id, 'passwordHash', u.password_hash)
            FROM insurance.dashboard_users u
           WHERE u.email = lower(_email) AND u.active);
END
$$;

-- login_failed(email, ip): counts one failed attempt against the e-mail and the IP.
CREATE FUNCTION dashboard.login_failed(_email text, _ip inet) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = '' AS $$
BEGIN
  INSERT INTO insurance.dashboard_login_failures AS f (key, failures, window_ends)
  SELECT k.key, 1, pg_catalog.now() + interval '15 minutes' FROM dashboard._login_keys(_email, _ip) k
  ON CONFLICT (key) DO UPDATE
     SET failures    = CASE WHEN f.window_ends > pg_catalog.now() THEN f.failures + 1 ELSE 1 END,
         window_ends = CASE WHEN f.window_ends > pg_catalog.now() THEN f.window_ends
                            ELSE pg_catalog.now() + interval '15 minutes' END;
  -- Counters of windows long gone are noise: keep the table small.
  DELETE FROM insurance.dashboard_login_failures WHERE window_ends < pg_catalog.now() - interval '1 day';
END
$$;

-- login_succeeded(email, password_hash, token_hash, ttl_seconds, ip, user_agent): opens a session
-- for the active user whose hash the app has just verified (a hash changed meanwhile refuses:
-- PT401 INVALID_CREDENTIALS), clears the e-mail's failure counter; {userId, email, expiresAt}.
CREATE OR REPLACE FUNCTION dashboard.login_succeeded(_email text, _password_hash text, _token_hash bytea,
                                          _ttl_seconds integer, _ip inet, _user_agent text) RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = '' AS $$
DECLARE
  _user insurance.dashboard_users;
  _expires_at timestamptz;
BEGIN
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
  WITH revoked AS (
    UPDATE insurance.dashboard_sessions SET revoked_at = pg_catalog.now()
     WHERE token_hash = _token_hash AND revoked_at IS NULL AND expires_at > pg_catalog.now()
    RETURNING 1)
  SELECT EXISTS (SELECT FROM revoked)
$$;

REVOKE ALL ON FUNCTION dashboard.login_failed(text, inet) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dashboard.login_failed(text, inet) TO insurance_anon, insurance_app;

COMMIT;
