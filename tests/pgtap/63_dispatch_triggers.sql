-- The triggers: risk item inserts and POLICY_CREATED orders enqueue their dispatch.
BEGIN;
\ir helpers/common.psql
SELECT plan(6);

DELETE FROM outbox.http_requests;
INSERT INTO insurance.packages (uid, name, sales_integration_slug)
  VALUES ('pgtap-63', 'P', 'PROVIDER_A'), ('pgtap-63-none', 'N', NULL);
INSERT INTO insurance.package_variants (package_id, code, name)
  SELECT id, 'travel', 'Travel' FROM insurance.packages WHERE uid LIKE 'pgtap-63%';
INSERT INTO insurance.risk_items (package_id, policy_uid, variant)
  SELECT id, uid || '-' || n, 'travel' FROM insurance.packages, generate_series(1, 3) n WHERE uid LIKE 'pgtap-63%';

SELECT is((SELECT count(*)::int FROM outbox.http_requests WHERE url = '/api/integrations/dispatch'), 3,
          'one dispatch per inserted item whose package has a sales slug (none for the others)');
SELECT is((SELECT array_agg(body -> 'record' ORDER BY id) FROM outbox.http_requests),
          (SELECT array_agg(jsonb_build_object('id', id, 'uid', uid) ORDER BY id) FROM insurance.risk_items
            WHERE policy_uid LIKE 'pgtap-63-_'),
          'the body names the record by id and uid (all /dispatch reads), no copy of its people');
SELECT is((SELECT (body - 'record')::text FROM outbox.http_requests LIMIT 1), '{"type": "INSERT", "table": "risk_items"}',
          'the body says what happened, as a database webhook does');
SELECT ok((SELECT bool_and(deliver_after <= now() AND delivered_at IS NULL) FROM outbox.http_requests),
          'due at once, undelivered');

INSERT INTO insurance.orders (risk_item_id, event)
  SELECT id, e FROM insurance.risk_items, unnest(ARRAY['POLICY_CREATED', 'POLICY_CANCELLED']) e
   WHERE policy_uid = 'pgtap-63-none-1';
SELECT is((SELECT array_agg(body) FROM outbox.http_requests WHERE url = '/api/integrations/dispatch-v2'),
          ARRAY[(SELECT jsonb_build_object('order_id', id) FROM insurance.orders o
                  WHERE event = 'POLICY_CREATED' AND risk_item_id = (SELECT id FROM insurance.risk_items WHERE policy_uid = 'pgtap-63-none-1'))],
          'a POLICY_CREATED order enqueues /dispatch-v2 {order_id}; other events do not');

-- A partner channel inserts items but cannot write the outbox: the trigger crosses for it.
INSERT INTO insurance.channels (id, name, api_key_hash)
  VALUES ('6363cccc-0000-4000-8000-000000000063', 'pgtap-63', public.digest('pgtap-63-key', 'sha256'));
INSERT INTO insurance.channel_packages (channel_id, package_id)
  SELECT '6363cccc-0000-4000-8000-000000000063', id FROM insurance.packages WHERE uid = 'pgtap-63';
SELECT pg_temp.act_as('insurance_channel', '{"sub": "6363cccc-0000-4000-8000-000000000063"}');
INSERT INTO insurance.risk_items (package_id, channel_id, policy_uid, variant)
  SELECT id, '6363cccc-0000-4000-8000-000000000063', 'pgtap-63-channel', 'travel'
    FROM insurance.packages WHERE uid = 'pgtap-63';
SELECT pg_temp.as_operator();
SELECT is((SELECT count(*)::int FROM outbox.http_requests
            WHERE body #>> '{record,uid}' = (SELECT uid::text FROM insurance.risk_items WHERE policy_uid = 'pgtap-63-channel')), 1,
          'an item a partner channel inserts is dispatched too (the trigger runs as its owner)');

SELECT * FROM finish();
ROLLBACK;
