-- The SECURITY DEFINER entry points of the reworked pipeline changes check the switched role
-- (insurance.require_role): the app's login under another surface's role is refused.
BEGIN;
\ir helpers/common.psql
SELECT plan(6);

SELECT pg_temp.as_login('insurance_app', 'insurance_service');
SELECT throws_ok($$SELECT integrations.retry_from_backoffice(ARRAY[1::bigint])$$, '42501', NULL,
                 'retry_from_backoffice refuses the service role');
SELECT throws_ok($$SELECT postsales.begin_emission(1, NULL, 'x', 60)$$, '42501', NULL,
                 'postsales.begin_emission refuses the service role');
SELECT lives_ok($$SELECT integrations.sweep()$$, 'the sweep runs as the service role');
SELECT pg_temp.act_as('insurance_dashboard');
SELECT throws_ok($$SELECT integrations.sweep()$$, '42501', NULL, 'the sweep refuses the dashboard role');
SELECT throws_ok($$SELECT integrations.retry_from_backoffice(ARRAY[-1::bigint])$$, '42501', NULL,
                 'retry_from_backoffice is not the dashboard''s to call (dashboard.retry_emissions audits it)');
SELECT pg_temp.act_as('insurance_holder');
SELECT throws_ok($$SELECT postsales.begin_emission(-1, NULL, 'x', 60)$$, 'PT401', NULL,
                 'postsales.begin_emission lets the holder in (and then checks the claimant)');
SELECT pg_temp.as_operator();

SELECT * FROM finish();
ROLLBACK;
