-- Partner webhooks (issue 20): an emission.* event is queued, in the transaction that records
-- the sales emission's outcome, for each endpoint of the item's channel that takes it; never
-- for another channel, an item without one, a channel without a secret, or a dashboard retry;
-- the signing salts honour the overlap; the partner lists and redelivers only its own; the
-- webhook backoff and the deferral of a busy endpoint.
BEGIN;
\ir helpers/common.psql
SELECT plan(24);

CREATE FUNCTION pg_temp.channel(_payload jsonb, _secret boolean DEFAULT true) RETURNS uuid LANGUAGE plpgsql AS $$
DECLARE _id uuid;
BEGIN
  INSERT INTO insurance.channels (name, branches, api_key_hash, integration_payload)
  VALUES ('wh-' || gen_random_uuid(), '{v1,integrations/v1}', sha256(gen_random_uuid()::text::bytea), _payload) RETURNING id INTO _id;
  IF _secret THEN
    PERFORM admin.set_webhook_secret('pgtap', _id, sha256(gen_random_uuid()::text::bytea));
  END IF;
  RETURN _id;
END $$;
CREATE FUNCTION pg_temp.item(_channel uuid) RETURNS bigint LANGUAGE sql AS $$
  INSERT INTO insurance.risk_items (package_id, channel_id, policy_uid, variant)
  VALUES ((SELECT id FROM insurance.packages WHERE uid = 'wh-pkg'), _channel, 'wh-' || gen_random_uuid(), 'travel')
  RETURNING id $$;
CREATE FUNCTION pg_temp.events(_channel uuid) RETURNS SETOF outbox.http_requests LANGUAGE sql AS $$
  SELECT * FROM outbox.http_requests WHERE channel_id = _channel ORDER BY id $$;
CREATE FUNCTION pg_temp.record(_item bigint, _outcome jsonb) RETURNS jsonb LANGUAGE sql AS $$
  SELECT integrations.record_emission(_item, 'PROVIDER_A', 'SALES_DISPATCH', _outcome,
                                      '{"maxAttempts": 3, "retryBaseSeconds": 1, "retryCapSeconds": 2}') $$;

INSERT INTO insurance.packages (uid, name) VALUES ('wh-pkg', 'Webhooks');
INSERT INTO insurance.package_variants (package_id, code, name)
SELECT id, 'travel', 'Travel' FROM insurance.packages WHERE uid = 'wh-pkg';
CREATE TEMP TABLE ids AS SELECT
  pg_temp.channel('{"webhooks": ["https://a.example/hook", {"url": "https://a.example/abandoned", "events": ["emission.abandoned"]}]}') AS a,
  pg_temp.channel('{"webhooks": ["https://b.example/hook"]}') AS b,
  pg_temp.channel('{"webhooks": ["https://c.example/hook"]}', false) AS no_secret;
ALTER TABLE ids ADD COLUMN item_a bigint, ADD COLUMN item_none bigint, ADD COLUMN item_c bigint;
INSERT INTO insurance.channel_packages (channel_id, package_id)
SELECT c, (SELECT id FROM insurance.packages WHERE uid = 'wh-pkg') FROM ids, unnest(ARRAY[a, b, no_secret]) c;
UPDATE ids SET item_a = pg_temp.item(a), item_none = pg_temp.item(NULL), item_c = pg_temp.item(no_secret);
GRANT SELECT ON ids TO PUBLIC;

SELECT pg_temp.act_as('insurance_service');
SELECT pg_temp.record(item_a, '{"status": "FAILED", "retryable": true, "code": "PROVIDER_UNAVAILABLE", "message": "<b>raw</b> 503", "httpStatus": 503}') FROM ids;
SELECT pg_temp.record(item_none, '{"status": "SUCCESS", "externalId": "N-1"}') FROM ids;
SELECT pg_temp.record(item_c, '{"status": "SUCCESS", "externalId": "C-1"}') FROM ids;
SELECT pg_temp.as_operator();

SELECT is((SELECT count(*) FROM ids, pg_temp.events(a)), 1::bigint,
          'a retryable failure: one event, to the endpoint that takes every event');
SELECT is((SELECT body - 'timestamp' FROM ids, pg_temp.events(a)),
          (SELECT jsonb_build_object('type', 'emission.failed', 'data', jsonb_build_object(
             'emissionId', e.id, 'riskItemId', r.id, 'riskItemUid', r.uid, 'policyUid', r.policy_uid,
             'provider', 'PROVIDER_A', 'event', 'SALES_DISPATCH', 'status', 'FAILED', 'externalId', NULL,
             'attempts', 1, 'nextRetryAt', e.next_retry_at,
             'error', jsonb_build_object('code', 'PROVIDER_UNAVAILABLE',
                                         'message', 'The insurer could not take the policy yet; it will be retried.')))
             FROM ids JOIN insurance.risk_items r ON r.id = ids.item_a
             JOIN insurance.integration_emissions e ON e.risk_item_id = r.id),
          'its body: the emission, its nextRetryAt and the holders'' generic error');
SELECT ok((SELECT body::text NOT LIKE '%raw%' FROM ids, pg_temp.events(a)), 'never the provider''s text');
SELECT ok((SELECT headers ->> 'webhook-id' ~ '^msg_[0-9a-f]{32}$' AND headers ->> 'X-Outbox-Webhook' = a::text
             AND url = 'https://a.example/hook' AND delivered_at IS NULL FROM ids, pg_temp.events(a)),
          'a webhook-id, the channel whose secret signs it, the endpoint');
SELECT is((SELECT count(*) FROM outbox.http_requests o, ids WHERE o.channel_id IN (b, no_secret)
             OR o.body #>> '{data,riskItemId}' = item_none::text), 0::bigint,
          'nothing for another channel, an item without one, or a channel without a secret');

-- A dashboard retry restarts the row: no outcome, no event. Then the outcomes.
SELECT pg_temp.act_as('insurance_service');
SELECT pg_temp.record(item_a, '{"status": "FAILED", "retryable": false, "code": "PROVIDER_REJECTED", "httpStatus": 400}') FROM ids;
SELECT pg_temp.as_operator();
SELECT is((SELECT array_agg(url || ' ' || (body ->> 'type') ORDER BY id) FROM ids, pg_temp.events(a)),
          ARRAY['https://a.example/hook emission.failed', 'https://a.example/hook emission.abandoned',
                'https://a.example/abandoned emission.abandoned'],
          'abandoned: to both endpoints, the second chose only that event');
SELECT is((SELECT body #> '{data,error}' FROM ids, pg_temp.events(a) ORDER BY id DESC LIMIT 1),
          '{"code": "PROVIDER_REJECTED", "message": "The insurer did not take the policy."}',
          'an abandoned event carries its code');
UPDATE insurance.integration_emissions SET status = 'FAILED', attempts = 0, next_retry_at = now()
 WHERE risk_item_id = (SELECT item_a FROM ids);
SELECT is((SELECT count(*) FROM ids, pg_temp.events(a)), 3::bigint, 'a dashboard retry sends nothing');
SELECT pg_temp.act_as('insurance_service');
SELECT pg_temp.record(item_a, '{"status": "SUCCESS", "externalId": "A-1"}') FROM ids;
SELECT pg_temp.record(item_a, '{"status": "SUCCESS", "externalId": "A-2"}') FROM ids;
SELECT pg_temp.as_operator();
SELECT is((SELECT array_agg(body ->> 'type' ORDER BY id) FILTER (WHERE url LIKE '%/hook') FROM ids, pg_temp.events(a)),
          ARRAY['emission.failed', 'emission.abandoned', 'emission.succeeded'],
          'succeeded once: a repeated SUCCESS changes no state and sends nothing');
SELECT is((SELECT body #>> '{data,externalId}' FROM ids, pg_temp.events(a) ORDER BY id DESC LIMIT 1), 'A-1',
          'the succeeded event carries the policy number');
SELECT is((SELECT count(DISTINCT headers ->> 'webhook-id') FROM ids, pg_temp.events(a)), 4::bigint, 'one webhook-id per event');

-- Salts: the worker's view, the overlap.
SELECT pg_temp.act_as('insurance_service');
SELECT is(jsonb_array_length(webhooks.signing_salts(a, 86400) -> 'salts'), 1, 'one salt before a rotation') FROM ids;
SELECT pg_temp.as_operator();
SELECT is(admin.set_webhook_secret('pgtap', a, sha256(gen_random_uuid()::text::bytea)) ->> 'rotated', 'true', 'a rotation') FROM ids;
SELECT pg_temp.act_as('insurance_service');
SELECT is(jsonb_array_length(webhooks.signing_salts(a, 86400) -> 'salts'), 2, 'within the overlap: both salts, the new first') FROM ids;
SELECT is(jsonb_array_length(webhooks.signing_salts(a, 0) -> 'salts'), 1, 'past it: the new one only') FROM ids;
SELECT is(webhooks.signing_salts(no_secret, 86400), '{"salts": []}', 'no secret, no salt') FROM ids;
SELECT pg_temp.as_operator();
SELECT is((SELECT count(*) FROM insurance.audit_log WHERE action = 'channels.webhook_secret' AND actor = 'pgtap'), 3::bigint,
          'every secret set is audited');
SELECT pg_temp.act_as('insurance_channel');
SELECT throws_ok($$SELECT webhooks.signing_salts(gen_random_uuid(), 1)$$, '42501', NULL, 'a channel never reads salts');
SELECT pg_temp.as_operator();

-- The worker's results: the webhook backoff (retryIn) and a busy endpoint's deferral (no attempt).
SELECT pg_temp.act_as('insurance_service');
SELECT outbox.claim_batch('w', 100, 30);
SELECT outbox.record_deliveries('w', (SELECT jsonb_agg(jsonb_build_object('id', id, 'status', 500, 'error', 'x', 'retry', true, 'retryIn', 7) ORDER BY id)
                                        FROM outbox.http_requests WHERE leased_by = 'w' AND url = 'https://a.example/hook'), 3);
SELECT outbox.record_deliveries('w', (SELECT jsonb_agg(jsonb_build_object('id', id, 'status', NULL, 'error', NULL, 'defer', 2) ORDER BY id)
                                        FROM outbox.http_requests WHERE leased_by = 'w' AND url = 'https://a.example/abandoned'), 3);
SELECT pg_temp.as_operator();
SELECT ok((SELECT bool_and(deliver_after BETWEEN now() + interval '6 seconds' AND now() + interval '8 seconds'
                           AND attempts = 1 AND last_status = 500)
             FROM outbox.http_requests WHERE url = 'https://a.example/hook'), 'a failed webhook waits retryIn seconds');
SELECT ok((SELECT attempts = 0 AND last_status IS NULL AND deliver_after BETWEEN now() + interval '1 second' AND now() + interval '3 seconds'
             FROM outbox.http_requests WHERE url = 'https://a.example/abandoned'), 'a deferred one lost no attempt');

-- The partner's view.
ALTER TABLE ids ADD COLUMN first_a bigint;
UPDATE ids SET first_a = (SELECT min(id) FROM outbox.http_requests WHERE channel_id = ids.a);
SELECT pg_temp.act_as('insurance_channel', jsonb_build_object('sub', b, 'branch', 'integrations/v1', 'gen',
                      (SELECT key_generation FROM insurance.channels WHERE id = b))) FROM ids;
SELECT is((SELECT data::jsonb -> 'items' FROM gateway.list_webhook_deliveries(0, 0, 49)), '[]', 'b lists none of a''s');
SELECT throws_ok(format('SELECT gateway.redeliver_webhook(0, %s)', (SELECT first_a FROM ids)),
                 'PT404', 'webhook delivery not found', 'nor redelivers them');
SELECT pg_temp.as_operator();

-- A batch of outcomes (integrations.record_batch, one statement for all): each recorded sales
-- dispatch queues its own events, in the batch's order, each with its own webhook-id; each
-- channel of the batch is read once, for every event type it receives: none for an item
-- without a channel or of a channel without a secret, wherever they stand in the batch.
ALTER TABLE ids ADD COLUMN batch bigint[];
UPDATE ids SET batch = ARRAY[pg_temp.item(a), pg_temp.item(a), pg_temp.item(a), pg_temp.item(b), pg_temp.item(NULL),
                             pg_temp.item(no_secret), pg_temp.item(b)];
SELECT pg_temp.act_as('insurance_service');
SELECT integrations.record_batch(jsonb_build_array(
         jsonb_build_object('riskItemId', batch[1], 'provider', 'PROVIDER_A', 'event', 'SALES_DISPATCH',
                            'outcome', '{"status": "SUCCESS", "externalId": "B-1"}'::jsonb),
         jsonb_build_object('riskItemId', batch[2], 'provider', 'PROVIDER_A', 'event', 'SALES_DISPATCH',
                            'outcome', '{"status": "FAILED", "retryable": false, "code": "PROVIDER_REJECTED"}'::jsonb),
         jsonb_build_object('riskItemId', batch[3], 'provider', 'PROVIDER_A', 'event', 'SALES_DISPATCH',
                            'outcome', '{"status": "FAILED", "retryable": true, "code": "PROVIDER_UNAVAILABLE"}'::jsonb),
         jsonb_build_object('riskItemId', batch[4], 'provider', 'PROVIDER_A', 'event', 'SALES_DISPATCH',
                            'outcome', '{"status": "SUCCESS", "externalId": "B-4"}'::jsonb),
         jsonb_build_object('riskItemId', batch[5], 'provider', 'PROVIDER_A', 'event', 'SALES_DISPATCH',
                            'outcome', '{"status": "SUCCESS", "externalId": "B-5"}'::jsonb),
         jsonb_build_object('riskItemId', batch[6], 'provider', 'PROVIDER_A', 'event', 'SALES_DISPATCH',
                            'outcome', '{"status": "SUCCESS", "externalId": "B-6"}'::jsonb),
         jsonb_build_object('riskItemId', batch[7], 'provider', 'PROVIDER_A', 'event', 'SALES_DISPATCH',
                            'outcome', '{"status": "FAILED", "retryable": false, "code": "PROVIDER_REJECTED"}'::jsonb)),
       '{"maxAttempts": 3, "retryBaseSeconds": 1, "retryCapSeconds": 2}') FROM ids;
SELECT pg_temp.as_operator();
SELECT is((SELECT array_agg(array_position(batch, (o.body #>> '{data,riskItemId}')::bigint) || ' ' || o.url || ' '
                            || (o.body ->> 'type') ORDER BY o.id)
             FROM ids, outbox.http_requests o
            WHERE (o.body #>> '{data,riskItemId}')::bigint = ANY (batch)),
          ARRAY['1 https://a.example/hook emission.succeeded', '2 https://a.example/hook emission.abandoned',
                '2 https://a.example/abandoned emission.abandoned', '3 https://a.example/hook emission.failed',
                '4 https://b.example/hook emission.succeeded', '7 https://b.example/hook emission.abandoned'],
          'a batch of outcomes: each sales dispatch''s events to its channel''s endpoints, in the batch''s order');
SELECT is((SELECT count(DISTINCT o.headers ->> 'webhook-id') FROM ids, outbox.http_requests o
            WHERE (o.body #>> '{data,riskItemId}')::bigint = ANY (batch)), 6::bigint,
          'each with its own webhook-id');

SELECT * FROM finish();
ROLLBACK;
