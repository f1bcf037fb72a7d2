-- The back-office search (issue 21): each kind of reference an operator types finds its risk
-- item, and each is an index lookup: no sequential scan of risk items, beneficiaries or
-- emissions, on tables filled and analysed as production fills them.
BEGIN;
\ir helpers/common.psql
SELECT plan(14);

INSERT INTO insurance.packages (uid, name, sales_integration_slug, post_sales_integration_slug)
VALUES ('pgtap-search', 'Search gold', 'PROVIDER_A', 'PROVIDER_B');
INSERT INTO insurance.package_variants (package_id, code, name, coverages, premium)
SELECT id, 'travel', 'Travel', '[]', 10 FROM insurance.packages WHERE uid = 'pgtap-search';
INSERT INTO insurance.risk_items (package_id, policy_uid, variant)
SELECT p.id, 'SRCH-' || n, 'travel' FROM insurance.packages p, generate_series(1, 3000) AS n WHERE p.uid = 'pgtap-search';
INSERT INTO insurance.beneficiaries (risk_item_id, name, email, is_holder, share)
SELECT r.id, 'Holder', 'holder.' || lower(r.policy_uid) || '@pgtap.invalid', true, 80
  FROM insurance.risk_items r WHERE r.policy_uid LIKE 'SRCH-%';
INSERT INTO insurance.beneficiaries (risk_item_id, name, email, share)
SELECT r.id, 'Kid', 'kid.' || lower(r.policy_uid) || '@pgtap.invalid', 20
  FROM insurance.risk_items r WHERE r.policy_uid LIKE 'SRCH-%';
-- Two items share a holder e-mail (one customer, two policies).
INSERT INTO insurance.beneficiaries (risk_item_id, name, email, share)
SELECT r.id, 'Shared', 'shared@pgtap.invalid', 0 FROM insurance.risk_items r WHERE r.policy_uid IN ('SRCH-7', 'SRCH-8');
INSERT INTO insurance.integration_emissions (risk_item_id, provider, event, status, external_id)
SELECT r.id, 'PROVIDER_A', 'SALES_DISPATCH', 'SUCCESS', 'PA-' || r.policy_uid
  FROM insurance.risk_items r WHERE r.policy_uid LIKE 'SRCH-%';
ANALYZE insurance.risk_items, insurance.beneficiaries, insurance.integration_emissions;

CREATE TEMP TABLE item AS
SELECT r.id, r.uid, (SELECT e.id FROM insurance.integration_emissions e WHERE e.risk_item_id = r.id) AS emission_id
  FROM insurance.risk_items r WHERE r.policy_uid = 'SRCH-1234';
CREATE TEMP TABLE scans_before AS
SELECT relname, seq_scan FROM pg_stat_xact_user_tables
 WHERE schemaname = 'insurance' AND relname IN ('risk_items', 'beneficiaries', 'integration_emissions');
GRANT SELECT ON item, scans_before TO insurance_dashboard;

SELECT pg_temp.act_as('insurance_dashboard', '{"sub": "1", "role": "dashboard"}');

-- A number may be a risk item id and another item's emission id: both are listed then.
SELECT ok(dashboard.search(q) -> 'items' @> (SELECT jsonb_build_array(jsonb_build_object('riskItemId', id)) FROM item),
          format('%s finds the item', what))
  FROM (VALUES ('a policy number', 'SRCH-1234'), ('a policy number in another case', ' srch-1234 '),
               ('a risk item id', (SELECT id::text FROM item)), ('a risk item uid', (SELECT upper(uid::text) FROM item)),
               ('an emission id', (SELECT emission_id::text FROM item)), ('an external id', 'PA-SRCH-1234'),
               ('a holder e-mail', 'HOLDER.srch-1234@pgtap.invalid'), ('a beneficiary e-mail', 'kid.srch-1234@pgtap.invalid'))
       AS t (what, q);
SELECT is(dashboard.search('SRCH-1234') -> 'items' -> 0 -> 'matched', '["policy number"]', 'it says what matched');
SELECT is(dashboard.search('SRCH-1234') -> 'items' -> 0 -> 'package', '{"uid": "pgtap-search", "name": "Search gold"}',
          'with the package by uid and name');
SELECT is(jsonb_array_length(dashboard.search('shared@pgtap.invalid') -> 'items'), 2, 'one e-mail, two policies: both');
SELECT is(dashboard.search('NO-SUCH-THING') -> 'items', '[]', 'nothing: an empty list');

SELECT is((SELECT sum(seq_scan) FROM pg_stat_xact_user_tables
            WHERE schemaname = 'insurance' AND relname IN ('risk_items', 'beneficiaries', 'integration_emissions')),
          (SELECT sum(seq_scan) FROM scans_before),
          'no search scanned the risk items, beneficiaries or emissions: each kind is an index lookup');
SELECT pg_temp.as_operator();

SELECT pg_temp.act_as('insurance_holder', '{"email": "holder.srch-1@pgtap.invalid"}');
SELECT throws_ok($$SELECT dashboard.search('SRCH-1')$$, '42501', NULL, 'only the dashboard role searches');
SELECT pg_temp.as_operator();

SELECT * FROM finish();
ROLLBACK;
