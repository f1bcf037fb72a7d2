-- require_role: the caller is the switched role, or the login itself when no role is switched.
-- The call passes when the caller is one of the allowed roles, a superuser (an operator in
-- psql, pgTAP) or a member of insurance_owner (migrations); anything else is refused with
-- 42501, whatever the login is named: the app's own login (insurance_app) or a second login
-- that plays its part.
BEGIN;
\ir helpers/common.psql
SELECT plan(12);

SELECT lives_ok($$SELECT insurance.require_role('insurance_holder')$$,
                'an operator session (a superuser, no role switched) may call any entry point');
SELECT pg_temp.act_as('insurance_anon');
SELECT throws_ok($$SELECT insurance.require_role('insurance_holder')$$, '42501', NULL,
                 'an operator switched to a role not in the list is held to that role');
SELECT pg_temp.as_operator();

SELECT pg_temp.as_login('insurance_app', 'insurance_holder');
SELECT lives_ok($$SELECT insurance.require_role('insurance_holder', 'insurance_service')$$,
                'the app under an allowed role passes');
SELECT pg_temp.act_as('insurance_anon');
SELECT throws_ok($$SELECT insurance.require_role('insurance_holder')$$, '42501',
                 'role insurance_anon may not call this entry point', 'the app under another role is refused');
SELECT pg_temp.act_as('none');
SELECT throws_ok($$SELECT insurance.require_role('insurance_holder')$$, '42501', NULL,
                 'the app without a switched role is refused');
SELECT pg_temp.as_operator();

SELECT pg_temp.as_login(pg_temp.second_app_login(), 'insurance_holder');
SELECT lives_ok($$SELECT insurance.require_role('insurance_holder', 'insurance_service')$$,
                'a second app login under an allowed role passes');
SELECT pg_temp.act_as('insurance_anon');
SELECT throws_ok($$SELECT insurance.require_role('insurance_holder')$$, '42501', NULL,
                 'a second app login under another role is refused');
SELECT pg_temp.act_as('none');
SELECT throws_ok($$SELECT insurance.require_role('insurance_holder')$$, '42501', NULL,
                 'a second app login without a switched role is refused');
SELECT pg_temp.as_operator();

-- A migrating login (a member of insurance_owner) passes unswitched, and is held to a role it switched to.
SELECT format('CREATE ROLE %I LOGIN NOSUPERUSER IN ROLE insurance_owner, insurance_anon', 'insurance_migrator_' || pg_backend_pid()) \gexec
SELECT pg_temp.as_login('insurance_migrator_' || pg_backend_pid());
SELECT lives_ok($$SELECT insurance.require_role('insurance_holder')$$, 'a member of insurance_owner passes');
SELECT pg_temp.act_as('insurance_anon');
SELECT throws_ok($$SELECT insurance.require_role('insurance_holder')$$, '42501', NULL,
                 'a member of insurance_owner switched to another role is held to it');
SELECT pg_temp.as_operator();

-- The second login is what a DBA would make: not a superuser, and the app's memberships.
SELECT is((SELECT rolsuper OR rolbypassrls FROM pg_roles WHERE rolname = pg_temp.second_app_login()), false,
          'the second login is neither superuser nor BYPASSRLS');
SELECT ok(pg_has_role(pg_temp.second_app_login(), 'insurance_app', 'USAGE'),
          'the second login holds what insurance_app holds');

SELECT * FROM finish();
ROLLBACK;
