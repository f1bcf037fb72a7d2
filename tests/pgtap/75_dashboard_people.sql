-- People of the back-office (issue 21): disabling a user refuses their login and ends every
-- session at once; a new password ends the sessions; sessions end one by one or all; each
-- change is audited with its result, refusals included.
BEGIN;
\ir helpers/common.psql
SELECT plan(16);

INSERT INTO insurance.dashboard_users (email, password_hash)
VALUES ('leaver@pgtap.invalid', '$argon2id$v=19$m=8,t=1,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA');
INSERT INTO insurance.dashboard_sessions (token_hash, user_id, expires_at)
SELECT public.digest('people-' || n, 'sha256'), u.id, now() + interval '1 hour'
  FROM insurance.dashboard_users u, generate_series(1, 3) AS n WHERE u.email = 'leaver@pgtap.invalid';

-- Whether the session's cookie still passes, asked as the dashboard role does at each request.
CREATE FUNCTION pg_temp.live(_n int) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_temp.act_as('insurance_dashboard');
  PERFORM dashboard.session_claims_or_deny(public.digest('people-' || _n, 'sha256'));
  PERFORM pg_temp.as_operator();
  RETURN true;
EXCEPTION WHEN SQLSTATE 'PT401' THEN
  PERFORM pg_temp.as_operator();
  RETURN false;
END
$$;
CREATE FUNCTION pg_temp.audit(_action text) RETURNS insurance.audit_log LANGUAGE sql AS $$
  SELECT * FROM insurance.audit_log WHERE action = _action ORDER BY id DESC LIMIT 1
$$;

SELECT is(jsonb_array_length(admin.list_dashboard_sessions('LEAVER@pgtap.invalid')), 3, 'three live sessions listed');
SELECT is(admin.end_dashboard_sessions('cli:pgtap', 'leaver@pgtap.invalid',
                                       ARRAY[left(encode(public.digest('people-1', 'sha256'), 'hex'), 12)]),
          '{"email": "leaver@pgtap.invalid", "sessionsEnded": 1}', 'one session ended by its listed id');
SELECT ok(NOT pg_temp.live(1) AND pg_temp.live(2), 'that one is refused, the others live on');
SELECT is(admin.end_dashboard_sessions('cli:pgtap', 'leaver@pgtap.invalid', ARRAY['000000000000']) ->> 'error',
          'SESSION_NOT_FOUND', 'an id that is no live session of theirs is refused');
SELECT is((pg_temp.audit('users.end_sessions')).result, 'SESSION_NOT_FOUND', 'and the refusal is recorded');

SELECT set_config('insurance.audit_via', 'cli', true), set_config('insurance.audit_on_behalf_of', 'TICKET-7', true);
SELECT is(admin.disable_dashboard_user('cli:pgtap', 'leaver@pgtap.invalid'),
          '{"email": "leaver@pgtap.invalid", "active": false, "sessionsEnded": 2}', 'disable ends the two left');
SELECT ok(NOT pg_temp.live(2) AND NOT pg_temp.live(3), 'no session of a disabled user is accepted');
SELECT is(dashboard.login_user('leaver@pgtap.invalid', '192.0.2.7') ->> 'active', 'false',
          'and their login answers a disabled user (the app tells only who gives the password)');
SELECT is((SELECT row(a.actor, a.on_behalf_of, a.via, a.targets, a.result)::text FROM pg_temp.audit('users.disable') a),
          row('cli:pgtap', 'TICKET-7', 'cli', '["leaver@pgtap.invalid"]'::jsonb, 'ok')::text,
          'audited with the OS user, on whose behalf, and via the command line');

INSERT INTO insurance.dashboard_sessions (token_hash, user_id, expires_at)
SELECT public.digest('people-4', 'sha256'), u.id, now() + interval '1 hour'
  FROM insurance.dashboard_users u WHERE u.email = 'leaver@pgtap.invalid';
SELECT ok(NOT pg_temp.live(4), 'even a session row made after the disable is refused while disabled');
SELECT is(admin.enable_dashboard_user('cli:pgtap', 'leaver@pgtap.invalid'),
          '{"email": "leaver@pgtap.invalid", "active": true}', 'enable');
SELECT ok(pg_temp.live(4) AND NOT pg_temp.live(1), 'enabled: live sessions count again, ended ones stay ended');
SELECT is(admin.set_dashboard_password('cli:pgtap', 'leaver@pgtap.invalid', '$argon2id$v=19$new') ->> 'sessionsEnded',
          '1', 'a new password ends every session');
SELECT is((SELECT password_hash FROM insurance.dashboard_users WHERE email = 'leaver@pgtap.invalid'), '$argon2id$v=19$new',
          'and is stored');
SELECT is(admin.disable_dashboard_user('cli:pgtap', 'nobody@pgtap.invalid') ->> 'error', 'USER_NOT_FOUND',
          'an unknown user is refused');
SELECT is((pg_temp.audit('users.disable')).result, 'USER_NOT_FOUND', 'and the refusal is recorded with its code');

SELECT * FROM finish();
ROLLBACK;
