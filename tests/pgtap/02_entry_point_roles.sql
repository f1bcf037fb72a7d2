-- require_role: the app's login is held to the role it switched to; operators are not.
BEGIN;
SELECT plan(4);

SELECT lives_ok($$SELECT insurance.require_role('insurance_holder')$$,
                'an operator session (postgres, role none) may call any entry point');
SET LOCAL SESSION AUTHORIZATION insurance_app;
SELECT set_config('role', 'insurance_holder', true);
SELECT lives_ok($$SELECT insurance.require_role('insurance_holder', 'insurance_service')$$,
                'the app under an allowed role passes');
SELECT set_config('role', 'insurance_anon', true);
SELECT throws_ok($$SELECT insurance.require_role('insurance_holder')$$, '42501',
                 'role insurance_anon may not call this entry point', 'the app under another role is refused');
SELECT set_config('role', 'none', true);
SELECT throws_ok($$SELECT insurance.require_role('insurance_holder')$$, '42501', NULL,
                 'the app without a switched role is refused');
RESET SESSION AUTHORIZATION;

SELECT * FROM finish();
ROLLBACK;
