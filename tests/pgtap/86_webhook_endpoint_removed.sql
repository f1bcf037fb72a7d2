-- Issue 41: an endpoint the operator removed never receives another event. A partner's
-- redelivery of a delivery to it is refused (PT409 WEBHOOK_ENDPOINT_REMOVED, nothing queued or
-- counted); removing or narrowing an endpoint (admin.set_channel_webhooks) ends its pending rows,
-- dead with the reason and audited; and the worker's claim never leases a row to an endpoint the
-- channel no longer has for its event type (an operator's `outbox retry` of such a row included):
-- it ends it instead, audited.
BEGIN;
\ir helpers/common.psql
SELECT plan(18);

DELETE FROM outbox.http_requests;  -- this transaction only (rolled back)
CREATE TEMP TABLE ids AS
SELECT (admin.create_channel('pgtap', 'er-' || gen_random_uuid(), '{integrations/v2}', sha256(gen_random_uuid()::text::bytea),
                             '{}', '{"webhooks": ["https://a.example/old", {"url": "https://a.example/new", "events": ["emission.succeeded"]}]}',
                             '{}') ->> 'id')::uuid AS a;
GRANT SELECT ON ids TO PUBLIC;
-- Three deliveries: two to the endpoint that will be removed (one pending, one delivered), one to
-- the endpoint that stays.
INSERT INTO outbox.http_requests (url, body, headers, channel_id, delivered_at)
SELECT u, '{"type": "emission.succeeded"}', jsonb_build_object('webhook-id', 'msg_' || n), a, d
  FROM ids, (VALUES (1, 'https://a.example/old', NULL::timestamptz), (2, 'https://a.example/old', now()),
                    (3, 'https://a.example/new', NULL)) v(n, u, d);
ALTER TABLE ids ADD COLUMN pending_old bigint, ADD COLUMN delivered_old bigint, ADD COLUMN pending_new bigint;
UPDATE ids SET pending_old = (SELECT id FROM outbox.http_requests WHERE headers ->> 'webhook-id' = 'msg_1'),
               delivered_old = (SELECT id FROM outbox.http_requests WHERE headers ->> 'webhook-id' = 'msg_2'),
               pending_new = (SELECT id FROM outbox.http_requests WHERE headers ->> 'webhook-id' = 'msg_3');

-- While the endpoint is there, its delivery is redelivered.
SELECT pg_temp.act_as('insurance_channel', jsonb_build_object('sub', a, 'branch', 'integrations/v2', 'gen',
                      (SELECT key_generation FROM insurance.channels WHERE id = a))) FROM ids;
SELECT ok((gateway.redeliver_webhook(0, (SELECT delivered_old FROM ids), 10)).data IS NOT NULL,
          'a delivery to a current endpoint is redelivered');

-- The operator removes the old endpoint.
SELECT pg_temp.as_operator();
SELECT is(admin.set_channel_webhooks('pgtap', (SELECT a FROM ids),
            '[{"url": "https://a.example/new", "events": ["emission.succeeded"]}]') ->> 'endedDeliveries', '2',
          'removing an endpoint ends its two pending rows (the first and its redelivery)');
SELECT is((SELECT array_agg(id ORDER BY id) FROM outbox.http_requests
            WHERE url = 'https://a.example/old' AND dead_at IS NOT NULL AND delivered_at IS NULL),
          (SELECT array_agg(id ORDER BY id) FROM outbox.http_requests
            WHERE url = 'https://a.example/old' AND delivered_at IS NULL),
          'they are dead');
SELECT ok((SELECT bool_and(last_error LIKE 'ENDPOINT_REMOVED:%') FROM outbox.http_requests
            WHERE url = 'https://a.example/old' AND delivered_at IS NULL), 'with the reason');
SELECT is((SELECT delivered_at IS NOT NULL AND dead_at IS NULL FROM outbox.http_requests WHERE id = (SELECT delivered_old FROM ids)),
          true, 'a delivered row is left as it was');
SELECT is((SELECT dead_at FROM outbox.http_requests WHERE id = (SELECT pending_new FROM ids)), NULL,
          'a row to the endpoint that stays is still pending');
SELECT is((SELECT jsonb_build_object('actor', actor, 'urls', details -> 'urls', 'n', jsonb_array_length(targets))
             FROM insurance.audit_log WHERE action = 'webhooks.endpoint_removed'
              AND details -> 'channels' ? (SELECT a FROM ids)::text),
          '{"actor": "pgtap", "urls": ["https://a.example/old"], "n": 2}', 'the ending is audited with the urls');
SELECT is(jsonb_array_length(admin.set_channel_webhooks('pgtap', (SELECT a FROM ids),
            '[{"url": "https://a.example/new", "events": ["emission.succeeded"]}]') -> 'webhooks'), 1,
          'setting the same endpoints again');
SELECT is((SELECT count(*)::integer FROM insurance.audit_log WHERE action = 'webhooks.endpoint_removed'
              AND details -> 'channels' ? (SELECT a FROM ids)::text), 1,
          'ends nothing more and audits nothing more');

-- The partner redelivers a delivery to the removed endpoint: refused, nothing queued or counted.
SELECT pg_temp.act_as('insurance_channel', jsonb_build_object('sub', a, 'branch', 'integrations/v2', 'gen',
                      (SELECT key_generation FROM insurance.channels WHERE id = a))) FROM ids;
SELECT throws_ok(format('SELECT gateway.redeliver_webhook(0, %s, 10)', (SELECT delivered_old FROM ids)),
                 'PT409', 'this delivery''s endpoint is no longer one of the channel''s endpoints for its event type',
                 'a redelivery to a removed endpoint is refused');
SELECT pg_temp.as_operator();
SELECT is((SELECT count(*)::integer FROM outbox.http_requests), 4, 'and queues nothing');
SELECT is((SELECT hits::integer FROM webhooks.redelivery_counts WHERE channel_id = (SELECT a FROM ids)), 1,
          'nor counts against the redelivery limit');

-- Narrowing an endpoint's events ends the pending rows of the types it no longer takes.
INSERT INTO outbox.http_requests (url, body, headers, channel_id)
SELECT 'https://a.example/new', '{"type": "emission.failed"}', '{"webhook-id": "msg_4"}', a FROM ids;
SELECT is((SELECT dead_at FROM outbox.http_requests WHERE headers ->> 'webhook-id' = 'msg_4'), NULL,
          'a row of a type the endpoint does not take, written by hand, is pending');

-- The worker's claim: the row of a type the endpoint does not take is ended, not leased; an
-- operator's `outbox retry` of a dead row to the removed endpoint ends again at the next claim.
SELECT is((outbox.retry_requests('pgtap', ARRAY[(SELECT pending_old FROM ids)]) -> 0 ->> 'result'), 'queued',
          'an operator puts a row to the removed endpoint back in the queue');
SELECT pg_temp.act_as('insurance_service');
SELECT is((SELECT array_agg((r ->> 'url') ORDER BY r ->> 'url') FROM jsonb_array_elements(outbox.claim_batch('w1', 10, 30) -> 'requests') r),
          ARRAY['https://a.example/new'], 'the worker leases only the row to a current endpoint of its type');
SELECT pg_temp.as_operator();
SELECT is((SELECT array_agg(headers ->> 'webhook-id' ORDER BY id) FROM outbox.http_requests
            WHERE dead_at IS NOT NULL AND last_error LIKE 'ENDPOINT_REMOVED:%' AND leased_by IS NULL),
          ARRAY['msg_1', 'msg_2', 'msg_4'], 'the others end dead with the reason');
SELECT is((SELECT actor FROM insurance.audit_log WHERE action = 'webhooks.endpoint_removed'
              AND details -> 'channels' ? (SELECT a FROM ids)::text ORDER BY id DESC LIMIT 1),
          'worker:w1', 'audited by the worker');

-- Nobody else may end deliveries.
SELECT ok(NOT has_function_privilege('insurance_channel', 'outbox._end_removed_endpoints(text, uuid, bigint[])', 'EXECUTE'),
          'a channel cannot call the helper');

SELECT * FROM finish();
ROLLBACK;
