-- Issue 43: what the emission path calls per batch, counted by the transaction's own function
-- statistics (track_functions). The worker's claim of a batch of webhook deliveries reads each
-- channel's endpoints once per (channel, event type), not once per row; the API's claim of a
-- batch with no paused provider fires none of integration_emissions' statement triggers (the
-- webhook events, the counts); a delivered /dispatch, whose body holds ids only, does not call
-- the delivered-body trigger, while a body with more is still reduced to its ids.
BEGIN;
\ir helpers/common.psql
SELECT plan(7);
SET LOCAL track_functions = 'all';

-- calls(fn): how many times this transaction called fn so far.
CREATE FUNCTION pg_temp.calls(_fn regproc) RETURNS bigint LANGUAGE sql AS $$
  SELECT coalesce(pg_stat_get_xact_function_calls(_fn), 0)
$$;

DELETE FROM outbox.http_requests;  -- this transaction only (rolled back)
CREATE TEMP TABLE ids AS
SELECT (admin.create_channel('pgtap', 'calls-' || gen_random_uuid(), '{integrations/v2}',
                             sha256(gen_random_uuid()::text::bytea), '{}',
                             '{"webhooks": ["https://a.example/hook"]}', '{}') ->> 'id')::uuid AS channel;
GRANT SELECT ON ids TO PUBLIC;

-- 25 pending deliveries of one channel, one event type: one read of its endpoints.
INSERT INTO outbox.http_requests (url, body, headers, channel_id)
SELECT 'https://a.example/hook', '{"type": "emission.succeeded"}', jsonb_build_object('webhook-id', 'msg_' || n), channel
  FROM ids, generate_series(1, 25) n;
SELECT pg_temp.calls('webhooks._endpoints') AS before \gset
SELECT set_config('role', 'insurance_service', true);
SELECT is(jsonb_array_length(outbox.claim_batch('pgtap-worker', 25, 60) -> 'requests'), 25,
          'the worker leases the 25 deliveries');
RESET ROLE;
SELECT is(pg_temp.calls('webhooks._endpoints') - :before, 1::bigint,
          'their endpoint check read the channel''s endpoints once, not once per row');

-- A batch of keys with no provider paused: no statement trigger of integration_emissions runs.
INSERT INTO insurance.packages (uid, name, sales_integration_slug) VALUES ('pgtap-calls', 'Calls', 'PROVIDER_A');
INSERT INTO insurance.package_variants (package_id, code, name)
  SELECT id, 'travel', 'Travel' FROM insurance.packages WHERE uid = 'pgtap-calls';
INSERT INTO insurance.risk_items (package_id, policy_uid, variant)
  SELECT id, 'calls-' || n, 'travel' FROM insurance.packages, generate_series(1, 3) n WHERE uid = 'pgtap-calls';
SELECT pg_temp.calls('webhooks._emission_event') AS events, pg_temp.calls('insurance._count_emissions') AS counts \gset
SELECT set_config('role', 'insurance_service', true);
SELECT is((SELECT count(*) FROM jsonb_array_elements(integrations.begin_batch(
             (SELECT jsonb_agg(jsonb_build_object('riskItemId', id, 'event', 'SALES_DISPATCH'))
                FROM insurance.risk_items WHERE policy_uid LIKE 'calls-%'), 'pgtap', 60)) b
            WHERE (b ->> 'claimed')::boolean), 3::bigint, 'the three keys are claimed');
RESET ROLE;
SELECT is(ARRAY[pg_temp.calls('webhooks._emission_event') - :events, pg_temp.calls('insurance._count_emissions') - :counts],
          ARRAY[0, 0]::bigint[], 'no statement trigger of integration_emissions ran for a claim');

-- Delivered rows: a /dispatch body of ids only skips the trigger; a body with more is reduced.
INSERT INTO outbox.http_requests (url, body)
VALUES ('/api/integrations/dispatch', '{"type": "INSERT", "table": "risk_items", "record": {"id": 1, "uid": "u"}}'),
       ('/api/integrations/retry', '{"emissionId": 7}'),
       ('https://chat.example/notice', '{"text": "PROVIDER_A failed for Ada", "emission_id": 7}');
SELECT pg_temp.calls('outbox._drop_delivered_body') AS drops \gset
UPDATE outbox.http_requests SET delivered_at = now() WHERE channel_id IS NULL AND delivered_at IS NULL;
SELECT is(pg_temp.calls('outbox._drop_delivered_body') - :drops, 1::bigint,
          'of the delivered rows only the one with more than ids called the trigger');
SELECT is((SELECT body FROM outbox.http_requests WHERE url = 'https://chat.example/notice'), '{"emission_id": 7}',
          'which kept its ids only');
SELECT is((SELECT body FROM outbox.http_requests WHERE body -> 'record' ->> 'uid' = 'u'),
          '{"type": "INSERT", "table": "risk_items", "record": {"id": 1, "uid": "u"}}', 'a dispatch keeps its ids');

SELECT * FROM finish();
ROLLBACK;
