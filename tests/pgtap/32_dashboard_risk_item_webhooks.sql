-- tRPC byRiskItem (dashboard.risk_item_emissions) looks for webhook deliveries only for an item
-- sold through a channel that has emissions (a delivery exists for no other): such an item's
-- webhooks are _emission_webhooks' answer, as before; any other's are '[]' without the call.
BEGIN;
\ir helpers/common.psql
SELECT plan(6);

INSERT INTO insurance.packages (uid, name, sales_integration_slug) VALUES ('pgtap-rie-wh', 'Webhooks', 'PROVIDER_A');
INSERT INTO insurance.package_variants (package_id, code, name)
SELECT id, 'travel', 'Travel' FROM insurance.packages WHERE uid = 'pgtap-rie-wh';
INSERT INTO insurance.channels (name, branches, api_key_hash, integration_payload)
VALUES ('pgtap-rie-wh', '{v1,integrations/v2}', sha256('pgtap-rie-wh'::bytea), '{"webhooks": ["https://a.example/hook"]}');
SELECT admin.set_webhook_secret('pgtap', (SELECT id FROM insurance.channels WHERE name = 'pgtap-rie-wh'),
                                sha256('salt'::bytea));
-- Three items: through the channel, with an emission whose outcome sends a webhook; through the
-- channel, no emission yet; no channel, with an emission.
INSERT INTO insurance.risk_items (package_id, channel_id, policy_uid, variant)
SELECT p.id, CASE WHEN v.channel THEN (SELECT id FROM insurance.channels WHERE name = 'pgtap-rie-wh') END, v.policy, 'travel'
  FROM insurance.packages p, (VALUES ('RIE-WH-1', true), ('RIE-WH-2', true), ('RIE-WH-3', false)) v(policy, channel)
 WHERE p.uid = 'pgtap-rie-wh';
CREATE TEMP TABLE _items AS SELECT policy_uid, id FROM insurance.risk_items WHERE policy_uid LIKE 'RIE-WH-%';
GRANT SELECT ON _items TO insurance_dashboard;
SELECT integrations.record_emission(id, 'PROVIDER_A', 'SALES_DISPATCH', '{"status": "SUCCESS", "externalId": "X"}',
                                    '{"maxAttempts": 3, "retryBaseSeconds": 1, "retryCapSeconds": 2}')
  FROM _items WHERE policy_uid IN ('RIE-WH-1', 'RIE-WH-3');
DELETE FROM insurance.integration_emissions
 WHERE risk_item_id = (SELECT id FROM _items WHERE policy_uid = 'RIE-WH-2');
SELECT ok((SELECT count(*) FROM outbox.http_requests o WHERE o.channel_id IS NOT NULL
            AND (o.body #>> '{data,riskItemId}')::bigint = (SELECT id FROM _items WHERE policy_uid = 'RIE-WH-1')) = 1,
          'the channel''s item has one webhook delivery queued');

-- What _emission_webhooks answers for each item's emissions (as the owner).
CREATE TEMP TABLE _expected AS
SELECT i.policy_uid, dashboard._emission_webhooks(coalesce((SELECT array_agg(e.id) FROM insurance.integration_emissions e
                                                             WHERE e.risk_item_id = i.id), '{}')) AS webhooks
  FROM _items i;
GRANT SELECT ON _expected TO insurance_dashboard;

SET LOCAL track_functions = 'all';
CREATE TEMP TABLE _calls_before AS
SELECT coalesce((SELECT calls FROM pg_stat_xact_user_functions WHERE schemaname = 'dashboard'
                  AND funcname = '_emission_webhooks'), 0) AS calls;
SELECT pg_temp.act_as('insurance_dashboard', '{"sub": "1", "role": "dashboard"}');
CREATE TEMP TABLE _answers AS
SELECT i.policy_uid, dashboard.risk_item_emissions(i.id) -> 'webhooks' AS webhooks FROM _items i;
SELECT pg_temp.as_operator();

SELECT is((SELECT webhooks FROM _answers WHERE policy_uid = 'RIE-WH-1'),
          (SELECT webhooks FROM _expected WHERE policy_uid = 'RIE-WH-1'),
          'an item of a channel with emissions: its deliveries, as _emission_webhooks answers');
SELECT is((SELECT jsonb_array_length(webhooks) FROM _answers WHERE policy_uid = 'RIE-WH-1'), 1, '... one of them');
SELECT is((SELECT array_agg(webhooks ORDER BY policy_uid) FROM _answers WHERE policy_uid <> 'RIE-WH-1'),
          (SELECT array_agg(webhooks ORDER BY policy_uid) FROM _expected WHERE policy_uid <> 'RIE-WH-1'),
          'a channel''s item without emissions, an item without a channel: the same answer');
SELECT is((SELECT array_agg(webhooks::text ORDER BY policy_uid) FROM _answers WHERE policy_uid <> 'RIE-WH-1'),
          ARRAY['[]', '[]'], '... an empty list');
SELECT is((SELECT calls FROM pg_stat_xact_user_functions WHERE schemaname = 'dashboard'
            AND funcname = '_emission_webhooks') - (SELECT calls FROM _calls_before), 1::bigint,
          'three answers, one call of _emission_webhooks: for the channel''s item with emissions');

SELECT * FROM finish();
ROLLBACK;
