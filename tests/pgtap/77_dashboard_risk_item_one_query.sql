-- tRPC byRiskItem (dashboard.risk_item_emissions) is one query (issue 32): no function call per
-- emission and none for the item's context, counted by the statistics of this transaction;
-- the states and rows it answers are those the list and the detail show. The list's page (tRPC
-- list) looks at the live claims once, not once per row.
BEGIN;
\ir helpers/common.psql
SELECT plan(8);

INSERT INTO insurance.packages (uid, name) VALUES ('pgtap-one-query', 'One query');
INSERT INTO insurance.package_variants (package_id, code, name)
SELECT id, 'travel', 'Travel' FROM insurance.packages WHERE uid = 'pgtap-one-query';
INSERT INTO insurance.risk_items (package_id, policy_uid, variant)
SELECT id, 'PGTAP-ONE-QUERY', 'travel' FROM insurance.packages WHERE uid = 'pgtap-one-query';
CREATE TEMP TABLE _item AS SELECT id, uid FROM insurance.risk_items WHERE policy_uid = 'PGTAP-ONE-QUERY';
GRANT SELECT ON _item TO insurance_dashboard;
-- FAILED and due (RETRY_QUEUED), FAILED and claimed by a worker (IN_PROGRESS), SUCCESS.
INSERT INTO insurance.integration_emissions (risk_item_id, provider, event, status, attempts, next_retry_at, error_history)
SELECT i.id, v.provider, 'POLICY_CREATED', v.status, 1, v.next_retry_at, '[{"code": "PROVIDER_UNAVAILABLE"}]'
  FROM _item i, (VALUES ('PROVIDER_A', 'FAILED', now() - interval '1 minute'),
                        ('PROVIDER_B', 'FAILED', now() + interval '1 hour'),
                        ('MAIL_PROVIDER', 'SUCCESS', NULL::timestamptz)) v(provider, status, next_retry_at);
INSERT INTO insurance.emission_claims (risk_item_id, provider, event, claimed_by, lease_until)
SELECT id, 'PROVIDER_B', 'POLICY_CREATED', 'pgtap', now() + interval '1 minute' FROM _item;

SET LOCAL track_functions = 'all';
SELECT pg_temp.act_as('insurance_dashboard', '{"sub": "1", "role": "dashboard"}');
CREATE TEMP TABLE _answers AS
SELECT dashboard.risk_item_emissions((SELECT id FROM _item)) AS by_id,
       dashboard.risk_item_emissions(NULL, (SELECT uid FROM _item)) AS by_uid,
       dashboard.list_emissions(NULL, NULL, NULL, NULL, NULL, NULL, 100) AS page;
SELECT pg_temp.as_operator();

SELECT is(ARRAY(SELECT schemaname || '.' || funcname || ' x' || calls FROM pg_stat_xact_user_functions
                 WHERE schemaname IN ('dashboard', 'insurance', 'webhooks', 'outbox') ORDER BY 1),
          ARRAY['dashboard._in_progress_ids x1', 'dashboard.list_emissions x1', 'dashboard.risk_item_emissions x2'],
          'two answers of three emissions: one call of risk_item_emissions each, none for the webhooks of an '
          'item without a channel (32_dashboard_risk_item_webhooks); a page of the list: one look at the claims');
SELECT is((SELECT by_uid FROM _answers), (SELECT by_id FROM _answers), 'by uid, the same answer as by id');
SELECT is((SELECT ARRAY(SELECT e ->> 'provider' || ' ' || (e ->> 'state') FROM jsonb_array_elements(by_id -> 'emissions') e)
             FROM _answers),
          ARRAY['PROVIDER_A RETRY_QUEUED', 'PROVIDER_B IN_PROGRESS', 'MAIL_PROVIDER SUCCESS'],
          'each emission in its state, oldest first');
SELECT is((SELECT ARRAY(SELECT e ->> 'provider' || ' ' || (e ->> 'state') FROM jsonb_array_elements(page -> 'items') e
                         WHERE e ->> 'policyUid' = 'PGTAP-ONE-QUERY' ORDER BY (e ->> 'id')::bigint)
             FROM _answers),
          ARRAY['PROVIDER_A RETRY_QUEUED', 'PROVIDER_B IN_PROGRESS', 'MAIL_PROVIDER SUCCESS'], 'the list shows the same states');
SELECT is((SELECT by_id -> 'emissions' FROM _answers),
          (SELECT jsonb_agg(dashboard._emission_json(e, r) ORDER BY e.id)
             FROM insurance.integration_emissions e JOIN insurance.risk_items r ON r.id = e.risk_item_id
            WHERE r.id = (SELECT id FROM _item)),
          'the emission rows are those the list and the detail show');
SELECT is((SELECT by_id -> 'riskItem' -> 'package' FROM _answers),
          (SELECT jsonb_build_object('id', id, 'uid', uid, 'name', name) FROM insurance.packages WHERE uid = 'pgtap-one-query'),
          'the item carries its package');

-- Run as the owner, it still answers only a dashboard session (as the policies would).
SELECT pg_temp.act_as('insurance_dashboard', '{"role": "dashboard"}');
SELECT throws_ok($$SELECT dashboard.risk_item_emissions((SELECT id FROM _item))$$, 'PT404', 'risk item not found',
                 'claims without a subject: the risk item does not exist for them');
SELECT pg_temp.act_as('insurance_dashboard', '{"sub": "1", "role": "holder"}');
SELECT throws_ok($$SELECT dashboard.risk_item_emissions((SELECT id FROM _item))$$, 'PT404', 'risk item not found',
                 'another role''s claims: neither');

SELECT * FROM finish();
ROLLBACK;
