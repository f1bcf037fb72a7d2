-- Issue 29: a channel's webhooks after its creation (admin.set_channel_webhooks, audited), only
-- with an integrations/* branch (create_channel, set_channel_webhooks and set_channel_branches
-- refuse WEBHOOKS_NEED_INTEGRATIONS_BRANCH), list_channels shows them, and a partner's
-- redeliveries are limited per channel a minute and audited.
BEGIN;
\ir helpers/common.psql
SELECT plan(17);

CREATE FUNCTION pg_temp.channel(_branches text[]) RETURNS uuid LANGUAGE sql AS $$
  INSERT INTO insurance.channels (name, branches, api_key_hash)
  VALUES ('wc-' || gen_random_uuid(), _branches, sha256(gen_random_uuid()::text::bytea)) RETURNING id $$;
CREATE TEMP TABLE ids AS SELECT pg_temp.channel('{v2,integrations/v2}') AS a, pg_temp.channel('{v1}') AS b;
GRANT SELECT ON ids TO PUBLIC;

-- The endpoints command.
SELECT is(admin.set_channel_webhooks('pgtap', (SELECT a FROM ids), '["https://a.example/h"]') ->> 'needsSecret', 'true',
          'a channel''s first endpoints: the caller sets its secret');
SELECT is((SELECT integration_payload -> 'webhooks' FROM insurance.channels WHERE id = (SELECT a FROM ids)),
          '["https://a.example/h"]', 'the endpoints are the channel''s');
SELECT is((SELECT details FROM insurance.audit_log WHERE action = 'channels.webhooks' AND targets ? (SELECT a FROM ids)::text),
          '{"webhooks": ["https://a.example/h"], "before": []}', 'audited with the endpoints before');
SELECT is((SELECT c -> 'webhooks' FROM jsonb_array_elements(admin.list_channels()) c
            WHERE c ->> 'id' = (SELECT a FROM ids)::text), '["https://a.example/h"]', 'list_channels shows them');
SELECT is((SELECT c -> 'webhooks' FROM jsonb_array_elements(admin.list_channels()) c
            WHERE c ->> 'id' = (SELECT b FROM ids)::text), '[]', 'a channel without webhooks lists none');
SELECT is(admin.set_channel_webhooks('pgtap', (SELECT b FROM ids), '["https://b.example/h"]') ->> 'error',
          'WEBHOOKS_NEED_INTEGRATIONS_BRANCH', 'no endpoint on a channel without an integrations branch');
SELECT is((SELECT integration_payload FROM insurance.channels WHERE id = (SELECT b FROM ids)), '{}', 'nothing changed');
SELECT is(admin.set_channel_webhooks('pgtap', (SELECT b FROM ids), '[]') ->> 'error', NULL,
          'removing every endpoint needs no branch');
SELECT is(admin.set_channel_branches('pgtap', (SELECT a FROM ids), '{v2}') ->> 'error', 'WEBHOOKS_NEED_INTEGRATIONS_BRANCH',
          'a channel with webhooks keeps an integrations branch');
SELECT is(admin.create_channel('pgtap', 'wc-create-' || gen_random_uuid(), '{v1}', sha256('k'::bytea), '{}',
                               '{"webhooks": ["https://c.example/h"]}', '{}') ->> 'error',
          'WEBHOOKS_NEED_INTEGRATIONS_BRANCH', 'nor is one created so');
SELECT is(admin.set_channel_webhooks('pgtap', gen_random_uuid(), '[]') ->> 'error', 'CHANNEL_NOT_FOUND', 'an unknown channel');

-- Redeliveries: at most _per_minute a channel, each audited; beyond, a refused reply with this limit.
INSERT INTO outbox.http_requests (url, body, headers, channel_id)
SELECT 'https://a.example/h', '{"type": "emission.succeeded"}',
       jsonb_build_object('webhook-id', 'msg_wc', 'X-Outbox-Webhook', a), a FROM ids;
ALTER TABLE ids ADD COLUMN delivery bigint;
UPDATE ids SET delivery = (SELECT max(id) FROM outbox.http_requests WHERE channel_id = ids.a);
SELECT pg_temp.act_as('insurance_channel', jsonb_build_object('sub', a, 'branch', 'integrations/v2', 'gen',
                      (SELECT key_generation FROM insurance.channels WHERE id = a))) FROM ids;
CREATE TEMP TABLE replies AS
SELECT n, r.* FROM generate_series(1, 5) n, LATERAL gateway.redeliver_webhook(0 * n, (SELECT delivery FROM ids), 3) r;  -- 0 * n: once per n
-- v0.9.0's signature, for an app of that release during an upgrade: the default 10 a minute.
SELECT ok((gateway.redeliver_webhook(0, (SELECT delivery FROM ids))).data IS NOT NULL,
          'the two-argument form counts at the default 10 a minute');
SELECT pg_temp.as_operator();
SELECT is((SELECT array_agg(data IS NOT NULL ORDER BY n) FROM replies), '{t,t,t,f,f}', 'three a minute, then refused');
SELECT is((SELECT array_agg(rate_remaining ORDER BY n) FROM replies WHERE n > 3), '{-1,-1}', 'refused replies say so');
SELECT is((SELECT DISTINCT rate_limit FROM replies WHERE n > 3), 3, 'with the redelivery limit');
SELECT is((SELECT count(*)::integer FROM outbox.http_requests WHERE channel_id = (SELECT a FROM ids)), 5,
          'a refused redelivery queues nothing');
SELECT is((SELECT count(*)::integer FROM insurance.audit_log
            WHERE action = 'webhooks.redeliver' AND actor = 'channel:' || (SELECT a FROM ids)), 4,
          'each redelivery is audited by its channel');

SELECT * FROM finish();
ROLLBACK;
