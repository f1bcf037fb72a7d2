-- Deploy insurance:admin_users to pg
-- Reworked after v0.9.0 (issue 31): _end_sessions bumps the user's device generation. Restated
-- whole; CREATE OR REPLACE, since the released version runs first.
-- People of the back-office, from the command line: an operator who leaves, or whose cookie
-- is stolen, is stopped at once. Disabling refuses the login (dashboard.login_user reads
-- `active`) and ends every session in the same transaction, so the back-office and tRPC refuse
-- the cookie at its next request (dashboard.session_claims_or_deny reads both); a new password
-- ends the sessions too. Every change writes its audit row, refusals included.
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

-- _end_sessions(user_id, ids): ends the user's live sessions named by ids (all when NULL), and
-- bumps the user's device generation, so that every device token of theirs stops exempting the
-- account's ceiling (docs/security.md "Devices"): disabling, a new password and ending sessions
-- all come through here.
CREATE OR REPLACE FUNCTION admin._end_sessions(_user_id bigint, _ids text[]) RETURNS integer
LANGUAGE sql SET search_path = '' AS $$
  WITH ended AS (
    UPDATE insurance.dashboard_sessions s SET revoked_at = pg_catalog.now()
     WHERE s.user_id = _user_id AND s.revoked_at IS NULL AND s.expires_at > pg_catalog.now()
       AND (_ids IS NULL OR pg_catalog.left(pg_catalog.encode(s.token_hash, 'hex'), 12) = ANY (_ids))
    RETURNING 1),
  devices_ended AS (
    UPDATE insurance.dashboard_users u SET device_generation = u.device_generation + 1
     WHERE u.id = _user_id
    RETURNING 1)
  SELECT pg_catalog.count(*)::integer FROM ended
$$;
COMMENT ON FUNCTION admin._end_sessions(bigint, text[]) IS
  'Ends the live sessions of user _user_id whose id (the first 12 hex digits of the token hash) is in _ids, '
  'or all of them when _ids is NULL, and bumps the user''s device generation (every device token of theirs '
  'ends); returns how many sessions. Helper of the admin functions.';
REVOKE ALL ON FUNCTION admin._end_sessions(bigint, text[]) FROM PUBLIC;

CREATE OR REPLACE FUNCTION admin._user_not_found(_actor text, _action text, _email text) RETURNS jsonb
LANGUAGE sql SET search_path = '' AS $$
  SELECT admin._refused(_actor, _action, pg_catalog.jsonb_build_array(pg_catalog.lower(_email)), 'USER_NOT_FOUND',
                        pg_catalog.format('no dashboard user with e-mail %s', pg_catalog.lower(_email)))
$$;
COMMENT ON FUNCTION admin._user_not_found(text, text, text) IS
  'The audited refusal USER_NOT_FOUND of action _action on _email. Helper of the admin functions.';
REVOKE ALL ON FUNCTION admin._user_not_found(text, text, text) FROM PUBLIC;

CREATE OR REPLACE FUNCTION admin.disable_dashboard_user(_actor text, _email text) RETURNS jsonb
LANGUAGE plpgsql SET search_path = '' AS $$
DECLARE
  _user insurance.dashboard_users;
  _ended integer;
BEGIN
  UPDATE insurance.dashboard_users u SET active = false WHERE u.email = pg_catalog.lower(_email) RETURNING * INTO _user;
  IF _user.id IS NULL THEN
    RETURN admin._user_not_found(_actor, 'users.disable', _email);
  END IF;
  _ended := admin._end_sessions(_user.id, NULL);
  PERFORM insurance.record_audit(_actor, 'users.disable', pg_catalog.jsonb_build_array(_user.email), 'ok',
                                 pg_catalog.jsonb_build_object('sessionsEnded', _ended));
  RETURN pg_catalog.jsonb_build_object('email', _user.email, 'active', false, 'sessionsEnded', _ended);
END
$$;
COMMENT ON FUNCTION admin.disable_dashboard_user(text, text) IS
  'Refuses the login of back-office user _email and ends every live session of theirs, at once; audited '
  'users.disable; returns {email, active: false, sessionsEnded} or refuses USER_NOT_FOUND. Operators.';
REVOKE ALL ON FUNCTION admin.disable_dashboard_user(text, text) FROM PUBLIC;

CREATE OR REPLACE FUNCTION admin.enable_dashboard_user(_actor text, _email text) RETURNS jsonb
LANGUAGE plpgsql SET search_path = '' AS $$
DECLARE
  _user insurance.dashboard_users;
BEGIN
  UPDATE insurance.dashboard_users u SET active = true WHERE u.email = pg_catalog.lower(_email) RETURNING * INTO _user;
  IF _user.id IS NULL THEN
    RETURN admin._user_not_found(_actor, 'users.enable', _email);
  END IF;
  PERFORM insurance.record_audit(_actor, 'users.enable', pg_catalog.jsonb_build_array(_user.email));
  RETURN pg_catalog.jsonb_build_object('email', _user.email, 'active', true);
END
$$;
COMMENT ON FUNCTION admin.enable_dashboard_user(text, text) IS
  'Lets back-office user _email log in again (sessions ended before stay ended); audited users.enable; '
  'returns {email, active: true} or refuses USER_NOT_FOUND. Operators.';
REVOKE ALL ON FUNCTION admin.enable_dashboard_user(text, text) FROM PUBLIC;

CREATE OR REPLACE FUNCTION admin.set_dashboard_password(_actor text, _email text, _password_hash text) RETURNS jsonb
LANGUAGE plpgsql SET search_path = '' AS $$
DECLARE
  _user insurance.dashboard_users;
  _ended integer;
BEGIN
  UPDATE insurance.dashboard_users u SET password_hash = _password_hash
   WHERE u.email = pg_catalog.lower(_email) RETURNING * INTO _user;
  IF _user.id IS NULL THEN
    RETURN admin._user_not_found(_actor, 'users.password', _email);
  END IF;
  _ended := admin._end_sessions(_user.id, NULL);
  PERFORM insurance.record_audit(_actor, 'users.password', pg_catalog.jsonb_build_array(_user.email), 'ok',
                                 pg_catalog.jsonb_build_object('sessionsEnded', _ended));
  RETURN pg_catalog.jsonb_build_object('email', _user.email, 'sessionsEnded', _ended);
END
$$;
COMMENT ON FUNCTION admin.set_dashboard_password(text, text, text) IS
  'Gives back-office user _email the argon2 hash _password_hash and ends every live session of theirs; '
  'audited users.password (never the hash); returns {email, sessionsEnded} or refuses USER_NOT_FOUND. Operators.';
REVOKE ALL ON FUNCTION admin.set_dashboard_password(text, text, text) FROM PUBLIC;

CREATE OR REPLACE FUNCTION admin.list_dashboard_sessions(_email text) RETURNS jsonb
LANGUAGE plpgsql STABLE SET search_path = '' AS $$
DECLARE
  _user_id bigint;
BEGIN
  SELECT u.id INTO _user_id FROM insurance.dashboard_users u WHERE u.email = pg_catalog.lower(_email);
  IF _user_id IS NULL THEN
    RETURN pg_catalog.jsonb_build_object('error', 'USER_NOT_FOUND',
                                         'message', pg_catalog.format('no dashboard user with e-mail %s', pg_catalog.lower(_email)));
  END IF;
  RETURN coalesce((
    SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
             'id', pg_catalog.left(pg_catalog.encode(s.token_hash, 'hex'), 12), 'createdAt', s.created_at,
             'expiresAt', s.expires_at, 'ip', s.ip, 'userAgent', s.user_agent) ORDER BY s.created_at, s.token_hash)
      FROM insurance.dashboard_sessions s
     WHERE s.user_id = _user_id AND s.revoked_at IS NULL AND s.expires_at > pg_catalog.now()), '[]');
END
$$;
COMMENT ON FUNCTION admin.list_dashboard_sessions(text) IS
  'The live sessions of back-office user _email, oldest first: [{id (12 hex digits of the token hash, never '
  'the token), createdAt, expiresAt, ip, userAgent}], or {error: USER_NOT_FOUND, message}. Operators.';
REVOKE ALL ON FUNCTION admin.list_dashboard_sessions(text) FROM PUBLIC;

CREATE OR REPLACE FUNCTION admin.end_dashboard_sessions(_actor text, _email text, _ids text[]) RETURNS jsonb
LANGUAGE plpgsql SET search_path = '' AS $$
DECLARE
  _user_id bigint;
  _ended integer;
  _targets jsonb := pg_catalog.jsonb_build_array(pg_catalog.lower(_email));
BEGIN
  SELECT u.id INTO _user_id FROM insurance.dashboard_users u WHERE u.email = pg_catalog.lower(_email);
  IF _user_id IS NULL THEN
    RETURN admin._user_not_found(_actor, 'users.end_sessions', _email);
  END IF;
  _ended := admin._end_sessions(_user_id, _ids);
  IF _ids IS NOT NULL AND _ended < pg_catalog.cardinality(_ids) THEN
    -- Every session named must be a live one of this user; otherwise nothing is ended.
    RAISE EXCEPTION USING ERRCODE = 'P0001', MESSAGE = 'SESSION_NOT_FOUND';
  END IF;
  PERFORM insurance.record_audit(_actor, 'users.end_sessions', _targets, 'ok',
                                 pg_catalog.jsonb_build_object('sessionsEnded', _ended, 'sessions', _ids));
  RETURN pg_catalog.jsonb_build_object('email', pg_catalog.lower(_email), 'sessionsEnded', _ended);
EXCEPTION WHEN raise_exception THEN
  IF SQLERRM <> 'SESSION_NOT_FOUND' THEN
    RAISE;
  END IF;
  RETURN admin._refused(_actor, 'users.end_sessions', _targets, 'SESSION_NOT_FOUND',
                        pg_catalog.format('not a live session of %s: %s', pg_catalog.lower(_email),
                                          pg_catalog.array_to_string(_ids, ', ')));
END
$$;
COMMENT ON FUNCTION admin.end_dashboard_sessions(text, text, text[]) IS
  'Ends the live sessions _ids (as list_dashboard_sessions names them) of back-office user _email, or all '
  'of them when _ids is NULL; audited users.end_sessions; returns {email, sessionsEnded}, or refuses '
  'USER_NOT_FOUND / SESSION_NOT_FOUND (then nothing is ended). Operators.';
REVOKE ALL ON FUNCTION admin.end_dashboard_sessions(text, text, text[]) FROM PUBLIC;

-- ---------------------------------------------------------------- dashboard users

-- create_dashboard_user: a back-office user with an argon2 hash; USER_EXISTS for a taken e-mail.
CREATE OR REPLACE FUNCTION admin.create_dashboard_user(_actor text, _email text, _password_hash text)
RETURNS jsonb
LANGUAGE plpgsql
SET search_path = ''
AS $$
DECLARE
  _user insurance.dashboard_users;
BEGIN
  IF EXISTS (SELECT FROM insurance.dashboard_users u WHERE u.email = pg_catalog.lower(_email)) THEN
    RETURN admin._refused(_actor, 'users.create', pg_catalog.jsonb_build_array(pg_catalog.lower(_email)),
                          'USER_EXISTS', pg_catalog.format('a dashboard user with e-mail %s exists already', _email));
  END IF;
  INSERT INTO insurance.dashboard_users (email, password_hash) VALUES (pg_catalog.lower(_email), _password_hash)
  RETURNING * INTO _user;
  PERFORM insurance.record_audit(_actor, 'users.create', pg_catalog.jsonb_build_array(_user.email), 'ok',
            pg_catalog.jsonb_build_object('id', _user.id));
  RETURN pg_catalog.jsonb_build_object('id', _user.id, 'email', _user.email, 'active', _user.active,
                                       'created_at', _user.created_at);
END
$$;
COMMENT ON FUNCTION admin.create_dashboard_user(text, text, text) IS
  'Creates back-office user _email with an argon2 hash; audited; refuses USER_EXISTS. Operators.';

-- list_dashboard_users: every user with its count of live sessions (never a hash).
CREATE OR REPLACE FUNCTION admin.list_dashboard_users()
RETURNS jsonb
LANGUAGE sql STABLE
SET search_path = ''
AS $$
  SELECT coalesce(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
           'id', u.id, 'email', u.email, 'active', u.active, 'created_at', u.created_at,
           'live_sessions', (SELECT pg_catalog.count(*) FROM insurance.dashboard_sessions s
                              WHERE s.user_id = u.id AND s.revoked_at IS NULL AND s.expires_at > pg_catalog.now()))
           ORDER BY u.id), '[]')
    FROM insurance.dashboard_users u
$$;
COMMENT ON FUNCTION admin.list_dashboard_users() IS
  'Every back-office user with its count of live sessions (never a hash), as a JSON array. Operators.';

COMMIT;
