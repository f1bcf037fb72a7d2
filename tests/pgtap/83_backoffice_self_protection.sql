-- The back-office protects its operators from themselves (issue 42): nobody disables their own
-- account from the Users page, nor the last enabled one (nobody could log in again); each
-- refusal is audited and changes nothing. The command line stays the way back.
BEGIN;
\ir helpers/common.psql
SELECT plan(12);

UPDATE insurance.dashboard_users SET active = false;  -- only the two below count (rolled back)
INSERT INTO insurance.dashboard_users (email, password_hash)
VALUES ('self@pgtap.invalid', '$argon2id$v=19$m=8,t=1,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA'),
       ('other@pgtap.invalid', '$argon2id$v=19$m=8,t=1,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA');

-- A dashboard session of user _email, as session_claims_or_deny makes its claims.
CREATE FUNCTION pg_temp.as_user(_email text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_temp.act_as('insurance_dashboard', (SELECT jsonb_build_object('sub', u.id::text, 'email', u.email,
                                                                             'role', 'dashboard')
                                                   FROM insurance.dashboard_users u WHERE u.email = _email));
END
$$;
CREATE FUNCTION pg_temp.active(_email text) RETURNS boolean LANGUAGE sql AS $$
  SELECT active FROM insurance.dashboard_users WHERE email = _email
$$;
CREATE FUNCTION pg_temp.last_audit() RETURNS insurance.audit_log LANGUAGE sql AS $$
  SELECT * FROM insurance.audit_log WHERE action = 'users.disable' ORDER BY id DESC LIMIT 1
$$;
GRANT EXECUTE ON FUNCTION pg_temp.as_user(text) TO PUBLIC;

-- 1. Their own account: refused, whatever the case of the address.
SELECT pg_temp.as_user('self@pgtap.invalid');
SELECT is(dashboard.disable_user('SELF@pgtap.invalid') ->> 'error', 'OWN_ACCOUNT', 'an operator cannot disable themselves');
SELECT pg_temp.as_operator();
SELECT ok(pg_temp.active('self@pgtap.invalid'), 'and stays enabled');
SELECT is((SELECT row(a.actor, a.via, a.targets, a.result)::text FROM pg_temp.last_audit() a),
          row('dashboard:self@pgtap.invalid', 'backoffice', '["self@pgtap.invalid"]'::jsonb, 'OWN_ACCOUNT')::text,
          'the refusal is audited, via the back-office');
SELECT matches((SELECT dashboard.disable_user('self@pgtap.invalid') ->> 'message'
                  FROM (SELECT pg_temp.as_user('self@pgtap.invalid')) s), 'python -m app users disable',
               'and says who can: another operator or the command line');
SELECT pg_temp.as_operator();

-- 2. Another operator, while someone else stays enabled: done.
SELECT pg_temp.as_user('self@pgtap.invalid');
SELECT is(dashboard.disable_user('other@pgtap.invalid') ->> 'active', 'false', 'another operator is disabled');
SELECT pg_temp.as_operator();
SELECT ok(NOT pg_temp.active('other@pgtap.invalid'), 'for real');

-- 3. The last enabled one: refused, even from a session that was live when it began (two
--    operators disabling each other at once; the second finds nobody else enabled).
SELECT pg_temp.as_user('other@pgtap.invalid');
SELECT is(dashboard.disable_user('self@pgtap.invalid') ->> 'error', 'LAST_ENABLED_USER',
          'the last enabled operator cannot be disabled');
SELECT pg_temp.as_operator();
SELECT ok(pg_temp.active('self@pgtap.invalid'), 'and stays enabled');
SELECT is((pg_temp.last_audit()).result, 'LAST_ENABLED_USER', 'that refusal is audited too');

-- 4. A disabled one again, and an unknown one: as before.
SELECT pg_temp.as_user('self@pgtap.invalid');
SELECT is(dashboard.disable_user('other@pgtap.invalid') ->> 'active', 'false', 'disabling a disabled operator is no refusal');
SELECT is(dashboard.disable_user('nobody@pgtap.invalid') ->> 'error', 'USER_NOT_FOUND', 'an unknown one is not found');
SELECT pg_temp.as_operator();

-- 5. The command line, the way back, is not the page: it may.
SELECT is(admin.disable_dashboard_user('cli:pgtap', 'self@pgtap.invalid') ->> 'active', 'false',
          'the command line may disable the last one (and enable it again)');

SELECT * FROM finish();
ROLLBACK;
