-- A webhook-id names the event, not the outbox row: the same outcome recorded again (as the
-- worker of a database restored to a point in time records what it resends) is queued under
-- the id the partner already has; another attempt, another outcome, another endpoint or another
-- item never shares an id.
BEGIN;
\ir helpers/common.psql
SELECT plan(6);

INSERT INTO insurance.packages (uid, name) VALUES ('wid-pkg', 'Webhook ids');
INSERT INTO insurance.package_variants (package_id, code, name)
SELECT id, 'travel', 'Travel' FROM insurance.packages WHERE uid = 'wid-pkg';
INSERT INTO insurance.channels (name, branches, api_key_hash, integration_payload)
VALUES ('wid-' || gen_random_uuid(), '{v1,integrations/v1}', sha256(gen_random_uuid()::text::bytea),
        '{"webhooks": ["https://a.example/hook", "https://a.example/other"]}');
CREATE TEMP TABLE ids AS SELECT (SELECT id FROM insurance.channels WHERE name LIKE 'wid-%') AS channel;
SELECT admin.set_webhook_secret('pgtap', channel, sha256(gen_random_uuid()::text::bytea)) FROM ids;
INSERT INTO insurance.channel_packages (channel_id, package_id)
SELECT channel, (SELECT id FROM insurance.packages WHERE uid = 'wid-pkg') FROM ids;
ALTER TABLE ids ADD COLUMN item bigint;
INSERT INTO insurance.risk_items (package_id, channel_id, policy_uid, variant)
SELECT (SELECT id FROM insurance.packages WHERE uid = 'wid-pkg'), channel, 'wid-1', 'travel' FROM ids;
UPDATE ids SET item = (SELECT id FROM insurance.risk_items WHERE policy_uid = 'wid-1');
GRANT SELECT ON ids TO PUBLIC;

CREATE FUNCTION pg_temp.record(_item bigint, _outcome jsonb) RETURNS jsonb LANGUAGE sql AS $$
  SELECT integrations.record_emission(_item, 'PROVIDER_A', 'SALES_DISPATCH', _outcome,
                                      '{"maxAttempts": 3, "retryBaseSeconds": 1, "retryCapSeconds": 2}') $$;
CREATE FUNCTION pg_temp.ids(_item bigint) RETURNS text[] LANGUAGE sql AS $$
  SELECT array_agg(headers ->> 'webhook-id' ORDER BY id) FROM outbox.http_requests
   WHERE body #>> '{data,riskItemId}' = _item::text $$;

-- The first life: one success, to both endpoints.
SELECT pg_temp.act_as('insurance_service');
SELECT pg_temp.record(item, '{"status": "SUCCESS", "externalId": "W-1"}') FROM ids;
SELECT pg_temp.as_operator();
CREATE TEMP TABLE first AS SELECT pg_temp.ids(item) AS sent FROM ids;
SELECT is((SELECT cardinality(sent) FROM first), 2, 'one event per endpoint');
SELECT ok((SELECT sent[1] ~ '^msg_[0-9a-f]{32}$' AND sent[1] <> sent[2] FROM first),
          'each endpoint its own id, of the documented shape');

-- The restored life: the emission back as it was before its outcome, the outcome recorded again.
DELETE FROM outbox.http_requests WHERE body #>> '{data,riskItemId}' = (SELECT item::text FROM ids);
UPDATE insurance.integration_emissions SET status = 'FAILED', attempts = 0, external_id = NULL, next_retry_at = now()
 WHERE risk_item_id = (SELECT item FROM ids);
SELECT pg_temp.act_as('insurance_service');
SELECT pg_temp.record(item, '{"status": "SUCCESS", "externalId": "W-1"}') FROM ids;
SELECT pg_temp.as_operator();
SELECT is((SELECT pg_temp.ids(item) FROM ids), (SELECT sent FROM first),
          'the same outcome recorded again: the same webhook-ids, so the partner drops the resend');

-- Another attempt with another outcome: new ids.
DELETE FROM outbox.http_requests WHERE body #>> '{data,riskItemId}' = (SELECT item::text FROM ids);
UPDATE insurance.integration_emissions SET status = 'FAILED', attempts = 0, external_id = NULL, next_retry_at = now()
 WHERE risk_item_id = (SELECT item FROM ids);
SELECT pg_temp.act_as('insurance_service');
SELECT pg_temp.record(item, '{"status": "FAILED", "retryable": true, "code": "PROVIDER_UNAVAILABLE", "httpStatus": 503}') FROM ids;
SELECT pg_temp.record(item, '{"status": "SUCCESS", "externalId": "W-1"}') FROM ids;
SELECT pg_temp.as_operator();
SELECT is((SELECT cardinality(pg_temp.ids(item)) FROM ids), 4, 'a failure, then a success: two events per endpoint');
SELECT is((SELECT count(DISTINCT x) FROM ids, unnest(pg_temp.ids(item)) x), 4::bigint,
          'each its own id');
SELECT ok((SELECT NOT (pg_temp.ids(item) && sent) FROM ids, first),
          'a success at the second attempt is another event than one at the first');

SELECT * FROM finish();
ROLLBACK;
