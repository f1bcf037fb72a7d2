-- integrations.standard_risk_item and provider_config: what the orchestrator reads.
BEGIN;
\ir helpers/common.psql
SELECT plan(15);

INSERT INTO insurance.packages (uid, name) VALUES ('pgtap-sri', 'Pgtap package');
INSERT INTO insurance.package_variants (package_id, code, name, coverages, premium)
SELECT id, 'health', 'Health plus', '[{"code": "BASIC", "limit": 500}]', 42.5
  FROM insurance.packages WHERE uid = 'pgtap-sri';
INSERT INTO insurance.risk_items (package_id, policy_uid, variant, insured_subject, metadata)
SELECT id, 'pgtap-pol-1', 'health', '{"name": "Ada"}', '{"integration": {"state": "SUCCESS"}}'
  FROM insurance.packages WHERE uid = 'pgtap-sri';
INSERT INTO insurance.beneficiaries (risk_item_id, name, email, is_holder, share)
SELECT id, 'Ada', 'ada@example.com', true, 100 FROM insurance.risk_items WHERE policy_uid = 'pgtap-pol-1';
INSERT INTO insurance.beneficiaries (risk_item_id, name, share)
SELECT id, 'Heir', 0 FROM insurance.risk_items WHERE policy_uid = 'pgtap-pol-1';
INSERT INTO insurance.authorized_claimants (email, risk_item_id)
SELECT 'ada@example.com', id FROM insurance.risk_items WHERE policy_uid = 'pgtap-pol-1'
ON CONFLICT DO NOTHING;
INSERT INTO insurance.integrations (slug, auth_config) VALUES ('PGTAP_PROVIDER', '{"apiKey": "k"}');

CREATE TEMP TABLE ids ON COMMIT DROP AS SELECT id FROM insurance.risk_items WHERE policy_uid = 'pgtap-pol-1';
GRANT SELECT ON ids TO insurance_service, insurance_holder;

SELECT ok(EXISTS (SELECT 1 FROM pg_policies WHERE schemaname = 'insurance' AND tablename = t AND policyname = p
                    AND 'insurance_service' = ANY (roles) AND cmd = 'SELECT'), p)
  FROM (VALUES ('risk_items', 'risk_items_select_service'), ('beneficiaries', 'beneficiaries_select_service'),
               ('authorized_claimants', 'authorized_claimants_select_service')) AS v(t, p);

SELECT pg_temp.act_as('insurance_service');
CREATE TEMP TABLE got ON COMMIT DROP AS SELECT integrations.standard_risk_item((SELECT id FROM ids)) AS j;
SELECT pg_temp.as_operator();

SELECT is((SELECT j ->> 'variant' FROM got), 'health', 'the item carries its variant');
SELECT is((SELECT j ->> 'package_uid' FROM got), 'pgtap-sri', 'and its package uid');
SELECT is((SELECT j -> 'insured_subject' FROM got), '{"name": "Ada"}'::jsonb, 'and the insured subject');
SELECT is((SELECT j -> 'beneficiaries' -> 0 -> 'isHolder' FROM got), 'true'::jsonb, 'beneficiaries carry isHolder');
SELECT is((SELECT jsonb_array_length(j -> 'beneficiaries') FROM got), 2, 'every beneficiary');
SELECT is((SELECT j -> 'authorized_claimants' FROM got), '[{"email": "ada@example.com"}]'::jsonb,
          'the authorized claimants');
SELECT is((SELECT j -> 'policy' ->> 'variantName' FROM got), 'Health plus', 'the policy data of the variant');
SELECT is((SELECT (j -> 'policy' ->> 'premium')::numeric FROM got), 42.5::numeric, 'and its premium');

SELECT pg_temp.act_as('insurance_service');
SELECT throws_ok('SELECT integrations.standard_risk_item(-1)', 'PT404', 'risk item not found',
                 'an unknown item is PT404 RISK_ITEM_NOT_FOUND');
SELECT is(integrations.provider_config('pgtap_provider'), '{"apiKey": "k"}'::jsonb,
          'provider_config reads auth_config by slug, case-insensitively');
SELECT is(integrations.provider_config('NO_SUCH_PROVIDER'), NULL, 'no row: NULL');
SELECT pg_temp.as_operator();

SELECT pg_temp.act_as('insurance_holder');
SELECT throws_ok('SELECT integrations.provider_config(''PGTAP_PROVIDER'')', '42501', NULL,
                 'a holder cannot read provider credentials');
SELECT pg_temp.as_operator();

SELECT * FROM finish();
ROLLBACK;
