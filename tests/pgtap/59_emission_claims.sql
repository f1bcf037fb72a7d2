-- Claims on an emission key: one provider call at a time, none after SUCCESS, leases expire.
BEGIN;
\ir helpers/common.psql
SELECT plan(17);

INSERT INTO insurance.packages (uid, name, sales_integration_slug, post_sales_integration_slug)
  VALUES ('pgtap-62', 'P', 'PROVIDER_A', NULL), ('pgtap-62-none', 'N', NULL, NULL);
INSERT INTO insurance.package_variants (package_id, code, name)
  SELECT id, 'travel', 'Travel' FROM insurance.packages WHERE uid LIKE 'pgtap-62%';
INSERT INTO insurance.risk_items (package_id, policy_uid, variant)
  SELECT id, uid || '-pol', 'travel' FROM insurance.packages WHERE uid LIKE 'pgtap-62%';
INSERT INTO insurance.authorized_claimants (risk_item_id, email)
  SELECT id, 'holder62@example.com' FROM insurance.risk_items WHERE policy_uid = 'pgtap-62-pol';
CREATE FUNCTION pg_temp.item(p text) RETURNS bigint LANGUAGE sql AS $$
  SELECT id FROM insurance.risk_items WHERE policy_uid = p $$;
CREATE TEMP TABLE t AS SELECT pg_temp.item('pgtap-62-pol') AS a, pg_temp.item('pgtap-62-none-pol') AS b;
GRANT SELECT ON t TO insurance_service, insurance_holder;
-- One key claimed as the single-key callers claim it: a begin_batch of one, a refusal raised PT404.
CREATE FUNCTION pg_temp.begin_emission(_item bigint, _provider text, _event text, _by text) RETURNS jsonb
LANGUAGE sql AS $$
  SELECT integrations._begin_one(jsonb_build_object('riskItemId', _item, 'provider', _provider, 'event', _event), _by, 60) $$;

SELECT pg_temp.act_as('insurance_service');
SELECT is(pg_temp.begin_emission((SELECT a FROM t), NULL, 'SALES_DISPATCH', 'w1') ->> 'claimed', 'true',
          'the first caller claims the key');
SELECT is(pg_temp.begin_emission((SELECT a FROM t), NULL, 'SALES_DISPATCH', 'w1') ->> 'claimed',
          'false', 'a second claim while the first holds the key is refused, even by the same caller');
SELECT is(pg_temp.begin_emission((SELECT a FROM t), NULL, 'SALES_DISPATCH', 'w2') - 'riskItemUid' - 'riskItemId',
          '{"claimed": false, "status": "IN_PROGRESS", "emissionId": null, "provider": "PROVIDER_A", "event": "SALES_DISPATCH"}'::jsonb,
          'a concurrent caller is told IN_PROGRESS');
SELECT is((SELECT count(*)::int FROM insurance.emission_claims WHERE risk_item_id = (SELECT a FROM t)), 1,
          'one claim per key');

SELECT pg_temp.as_operator();
-- Two minutes later (the lease was 60 s):
SELECT pg_temp.age_rows('insurance.emission_claims', '2 minutes');
SELECT pg_temp.act_as('insurance_service');
SELECT is(pg_temp.begin_emission((SELECT a FROM t), NULL, 'SALES_DISPATCH', 'w2') ->> 'claimed', 'true',
          'an expired claim (a crashed caller) is taken over');
SELECT is(pg_temp.begin_emission((SELECT a FROM t), NULL, 'SALES_DISPATCH', 'w2') ->> 'status', 'IN_PROGRESS',
          'and is held again');

SELECT is(integrations.record_emission((SELECT a FROM t), 'PROVIDER_A', 'SALES_DISPATCH',
          '{"status": "SUCCESS", "externalId": "X-1"}', '{"claimedBy": "w2"}') ->> 'status', 'SUCCESS',
          'the holder records SUCCESS');
SELECT is((SELECT count(*)::int FROM insurance.emission_claims WHERE risk_item_id = (SELECT a FROM t)), 0,
          'recording gives the claim back');
SELECT is(pg_temp.begin_emission((SELECT a FROM t), NULL, 'SALES_DISPATCH', 'w3') - 'emissionId' - 'nextRetryAt' - 'riskItemUid' - 'riskItemId',
          '{"claimed": false, "status": "SUCCESS", "externalId": "X-1", "attempts": 1, "error": null, "provider": "PROVIDER_A", "event": "SALES_DISPATCH"}'::jsonb,
          'after SUCCESS nobody claims: the stored result is answered');
SELECT is(pg_temp.begin_emission((SELECT b FROM t), NULL, 'SALES_DISPATCH', 'w1') ->> 'status', 'skipped',
          'a package without sales_integration_slug: skipped');
SELECT is(pg_temp.begin_emission((SELECT a FROM t), 'PROVIDER_B', 'BENEFICIARIES_SYNC', 'w1') ->> 'idempotencyKey',
          (SELECT uid FROM insurance.risk_items WHERE id = (SELECT a FROM t)) || ':PROVIDER_B:BENEFICIARIES_SYNC',
          'the idempotency key is <uid>:<provider>:<event>');
SELECT throws_ok($$SELECT pg_temp.begin_emission(-1, NULL, 'SALES_DISPATCH', 'w1')$$, 'PT404', 'risk item not found',
                 'an unknown risk item is PT404');

SELECT is((SELECT jsonb_agg(coalesce(x ->> 'status', x #>> '{refused,code}'))
             FROM jsonb_array_elements(integrations.begin_batch(jsonb_build_array(
                    jsonb_build_object('riskItemId', (SELECT b FROM t), 'event', 'SALES_DISPATCH'),
                    jsonb_build_object('riskItemId', -1, 'event', 'SALES_DISPATCH'),
                    jsonb_build_object('orderId', -1),
                    jsonb_build_object('emissionId', -1)), 'w1')) x),
          '["skipped", "RISK_ITEM_NOT_FOUND", "ORDER_NOT_FOUND", "EMISSION_NOT_FOUND"]'::jsonb,
          'begin_batch answers each spec in order, an unknown id as refused');
SELECT is(integrations.begin_batch(jsonb_build_array(jsonb_build_object('riskItemId', (SELECT a FROM t),
          'provider', 'PROVIDER_B', 'event', 'BATCH_TEST')), 'w1') #>> '{0,item,id}', (SELECT a FROM t)::text,
          'a claimed key comes with its StandardRiskItem');
SELECT is(integrations.record_batch(jsonb_build_array(
            jsonb_build_object('riskItemId', (SELECT a FROM t), 'provider', 'PROVIDER_B', 'event', 'BATCH_TEST',
                               'outcome', '{"status": "SUCCESS", "externalId": "B-1"}'::jsonb)), '{}') #>> '{0,externalId}',
          'B-1', 'record_batch records each outcome');

SELECT pg_temp.act_as('insurance_holder', '{"email": "other@example.com"}');
SELECT throws_ok($$SELECT postsales.begin_emission((SELECT a FROM t), NULL, 'w1', 60)$$, 'PT401', 'access denied',
                 'post-sales: a holder without a claimant row is denied');
SELECT pg_temp.with_claims('{"email": "holder62@example.com"}');
SELECT is(postsales.begin_emission((SELECT a FROM t), NULL, 'w1', 60) ->> 'status', 'skipped',
          'post-sales: the claimant of a package without post_sales_integration_slug gets skipped');

SELECT pg_temp.as_operator();
SELECT * FROM finish();
ROLLBACK;
