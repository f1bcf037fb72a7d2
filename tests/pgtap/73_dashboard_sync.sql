-- The dashboard's beneficiaries sync (dashboard.begin_beneficiaries_sync): its own entry point, for the dashboard
-- role only, with the session's access check and an audit row; emissions by uid.
BEGIN;
\ir helpers/common.psql
SELECT plan(8);

INSERT INTO insurance.packages (uid, name, post_sales_integration_slug) VALUES ('pgtap-sync', 'Sync', 'PROVIDER_A');
INSERT INTO insurance.package_variants (package_id, code, name) SELECT id, 'travel', 'Travel'
  FROM insurance.packages WHERE uid = 'pgtap-sync';
INSERT INTO insurance.risk_items (package_id, policy_uid, variant, insured_subject)
SELECT id, 'sync-a', 'travel', '{"name": "Ann"}' FROM insurance.packages WHERE uid = 'pgtap-sync';
CREATE TEMP TABLE _item AS SELECT id, uid FROM insurance.risk_items WHERE policy_uid = 'sync-a';
GRANT SELECT ON _item TO PUBLIC;

SELECT ok(has_function_privilege('insurance_dashboard', 'dashboard.begin_beneficiaries_sync(bigint, uuid, text, integer)', 'EXECUTE')
          AND NOT has_function_privilege('insurance_service', 'dashboard.begin_beneficiaries_sync(bigint, uuid, text, integer)', 'EXECUTE'),
          'the sync is the dashboard role''s, not the service role''s');

SELECT pg_temp.act_as('insurance_dashboard');
SELECT throws_ok(format('SELECT dashboard.begin_beneficiaries_sync(NULL, %L, ''pgtap'', 60)', (SELECT uid FROM _item)),
                 'PT401', 'a valid dashboard session is required', 'without a session''s claims: 401');
SELECT pg_temp.with_claims('{"sub": "7", "email": "ops@pgtap.invalid", "role": "dashboard"}');
SELECT is(dashboard.begin_beneficiaries_sync(NULL, (SELECT uid FROM _item), 'pgtap', 60) - 'item' - 'idempotencyKey',
          jsonb_build_object('riskItemId', (SELECT id FROM _item), 'riskItemUid', (SELECT uid FROM _item),
                             'provider', 'PROVIDER_A', 'event', 'BENEFICIARIES_SYNC', 'claimed', true,
                             'emissionId', NULL, 'status', NULL, 'attempts', 0),
          'a session claims the key of the package''s post-sales provider, by uid');
SELECT is(dashboard.begin_beneficiaries_sync((SELECT id FROM _item), NULL, 'pgtap', 60) ->> 'status', 'IN_PROGRESS',
          'the same key again, by id: another call holds it');
SELECT throws_ok('SELECT dashboard.begin_beneficiaries_sync(999999999999, NULL, ''pgtap'', 60)', 'PT404',
                 'risk item not found', 'an unknown item: 404');
SELECT is(dashboard.risk_item_emissions(NULL, (SELECT uid FROM _item)) -> 'riskItem' ->> 'policyUid', 'sync-a',
          'emissions of an item by its uid');
SELECT throws_ok(format('SELECT dashboard.risk_item_emissions(1, %L)', (SELECT uid FROM _item)), 'PT404', NULL,
                 'an id and a uid of two items name nothing');
SELECT pg_temp.as_operator();
SELECT is((SELECT array_agg(actor ORDER BY id) FROM insurance.audit_log
            WHERE action = 'emissions.sync' AND targets = jsonb_build_array((SELECT uid FROM _item))),
          ARRAY['dashboard:ops@pgtap.invalid', 'dashboard:ops@pgtap.invalid'],
          'every sync is audited with the session''s user');

SELECT * FROM finish();
ROLLBACK;
