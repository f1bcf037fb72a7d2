-- The helpers of every pgTAP file (helpers/common.psql) do what the other files rely on: a
-- helper that quietly did nothing would make their assertions prove nothing.
BEGIN;
\ir helpers/common.psql
SELECT plan(9);

SELECT pg_temp.act_as('insurance_holder', '{"email": "h@example.com"}');
SELECT is(ARRAY[session_user::text, current_user::text, insurance.claim('email')],
          ARRAY['postgres', 'insurance_holder', 'h@example.com'], 'act_as switches the role and sets the claims');
SELECT pg_temp.with_claims(NULL);
SELECT is(ARRAY[current_user::text, current_setting('request.jwt.claims')], ARRAY['insurance_holder', ''],
          'with_claims changes the claims only');
SELECT pg_temp.as_login('insurance_app', 'insurance_service');
SELECT is(ARRAY[session_user::text, current_user::text], ARRAY['insurance_app', 'insurance_service'],
          'as_login is the login itself, switched as asked');
SELECT pg_temp.as_operator();
SELECT is(ARRAY[session_user::text, current_user::text, current_setting('role'), current_setting('request.jwt.claims')],
          ARRAY['postgres', 'postgres', 'none', ''], 'as_operator: the operator, no role, no claims');
SELECT throws_ok($$SELECT pg_temp.act_as('insurance_app')$$, 'P0001', NULL, 'act_as takes surface roles only');

-- age_rows: the stored times move back, no trigger sees it, a filter that matches nothing raises.
INSERT INTO insurance.packages (uid, name) VALUES ('pgtap-helpers', 'Helpers');
INSERT INTO insurance.package_variants (package_id, code, name)
  SELECT id, 'travel', 'Travel' FROM insurance.packages WHERE uid = 'pgtap-helpers';
INSERT INTO insurance.risk_items (package_id, policy_uid, variant)
  SELECT id, 'helpers-1', 'travel' FROM insurance.packages WHERE uid = 'pgtap-helpers';
SELECT is(pg_temp.age_rows('insurance.risk_items', '2 hours', $$policy_uid = 'helpers-1'$$), 1, 'age_rows says how many rows moved');
SELECT is((SELECT ARRAY[created_at, updated_at] FROM insurance.risk_items WHERE policy_uid = 'helpers-1'),
          ARRAY[now() - interval '2 hours', now() - interval '2 hours'],
          'every timestamp column moved back, updated_at too (its trigger did not fire)');
SELECT throws_ok($$SELECT pg_temp.age_rows('insurance.risk_items', '1 hour', 'false')$$, 'P0001',
                 'age_rows: no row of insurance.risk_items matches false', 'a filter that matches nothing raises');
SELECT is(current_setting('session_replication_role'), 'origin', 'triggers fire again after the move');

SELECT * FROM finish();
ROLLBACK;
