-- Providers that misbehave (issue 12): Retry-After clamped, provider text cleaned and cut,
-- the masked request payload kept for operators, metadata.integration for the sales
-- dispatch only, and a batch whose poisoned outcome never blocks the others.
BEGIN;
\ir helpers/common.psql
SELECT plan(20);

INSERT INTO insurance.packages (uid, name, sales_integration_slug) VALUES ('pgtap-65', 'P', 'PROVIDER_A');
INSERT INTO insurance.package_variants (package_id, code, name)
  SELECT id, 'travel', 'Travel' FROM insurance.packages WHERE uid = 'pgtap-65';
INSERT INTO insurance.risk_items (package_id, policy_uid, variant)
  SELECT id, 'p65-' || n, 'travel' FROM insurance.packages, generate_series(1, 6) n WHERE uid = 'pgtap-65';
CREATE TEMP TABLE t_items ON COMMIT DROP AS
  SELECT policy_uid, id FROM insurance.risk_items WHERE policy_uid LIKE 'p65-%';
GRANT SELECT ON t_items TO insurance_service;
DELETE FROM outbox.http_requests;

CREATE FUNCTION pg_temp.item(p text) RETURNS bigint LANGUAGE sql AS $$ SELECT id FROM t_items WHERE policy_uid = p $$;
CREATE FUNCTION pg_temp.opts() RETURNS jsonb LANGUAGE sql AS $$
  SELECT '{"maxAttempts": 5, "retryBaseSeconds": 1, "retryCapSeconds": 2, "chatWebhookUrl": "https://chat.example.com/hook"}'::jsonb $$;
CREATE FUNCTION pg_temp.em(p text, ev text DEFAULT 'SALES_DISPATCH') RETURNS insurance.integration_emissions LANGUAGE sql AS $$
  SELECT * FROM insurance.integration_emissions WHERE risk_item_id = pg_temp.item(p) AND event = ev $$;
CREATE FUNCTION pg_temp.entry(o jsonb, p text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('riskItemId', pg_temp.item(p), 'provider', 'PROVIDER_A', 'event', 'SALES_DISPATCH', 'outcome', o) $$;

SELECT pg_temp.act_as('insurance_service');

-- Retry-After: an absurd value is clamped to the cap instead of overflowing (22008).
SELECT is(integrations.retry_delay(1, 1, 2, 10000000000000) <= interval '2 seconds', true,
          'retry_delay clamps an absurd Retry-After to the cap');
SELECT is(integrations.retry_delay(1, 60, 120, -50) <= interval '60 seconds', true,
          'a negative Retry-After counts as none');
SELECT is(integrations.record_emission(pg_temp.item('p65-1'), 'PROVIDER_A', 'SALES_DISPATCH',
            '{"status": "FAILED", "code": "PROVIDER_UNAVAILABLE", "message": "down", "retryable": true,
              "httpStatus": 503, "retryAfter": 10000000000000}', pg_temp.opts()) ->> 'status',
          'FAILED', 'an outcome with Retry-After 10^13 is recorded');
SELECT ok((SELECT next_retry_at <= now() + interval '2 seconds' FROM pg_temp.em('p65-1')),
          'and its next retry is within the cap');

-- Provider text: control characters stripped, cut; the request payload kept.
SELECT lives_ok($$SELECT integrations.record_emission(pg_temp.item('p65-2'), 'PROVIDER_A', 'SALES_DISPATCH',
            jsonb_build_object('status', 'FAILED', 'code', 'PROVIDER_REJECTED', 'retryable', false, 'httpStatus', 400,
                               'message', E'bad\x01\x07\x1b[31m <html>' || repeat('x', 50000),
                               'requestPayload', '{"method": "POST", "headers": {"X-Api-Key": "***"}, "body": {"a": 1}}'::jsonb),
            pg_temp.opts())$$, 'an outcome with control characters and 50,000 characters of text is recorded');
SELECT is((SELECT error_history -> 0 ->> 'message' FROM pg_temp.em('p65-2')) LIKE E'bad[31m <html>xxx%', true,
          'control characters are stripped from the stored message');
SELECT is((SELECT length(error_history -> 0 ->> 'message') FROM pg_temp.em('p65-2')), 2000,
          'the stored message is cut to 2,000 characters');
SELECT is((SELECT error_history #> '{0,requestPayload,headers,X-Api-Key}' FROM pg_temp.em('p65-2')), '"***"'::jsonb,
          'error_history keeps the masked request payload');
SELECT ok((SELECT octet_length((error_history -> 0)::text) < 8192 FROM pg_temp.em('p65-2')),
          'an error_history row stays under 8 KB');
SELECT ok((SELECT length(body ->> 'text') < 600 FROM outbox.http_requests WHERE url = 'https://chat.example.com/hook'
            AND body::text LIKE '%PROVIDER_REJECTED%'), 'the chat notice carries at most 300 characters of it');
SELECT lives_ok($$SELECT integrations.record_emission(pg_temp.item('p65-2'), 'PROVIDER_A', 'POST_SALES',
            jsonb_build_object('status', 'FAILED', 'code', 'PROVIDER_UNAVAILABLE', 'retryable', true, 'message', 'x',
                               'requestPayload', jsonb_build_object('body', repeat('y', 10000))), pg_temp.opts())$$,
          'a huge request payload is recorded');
SELECT is((SELECT error_history #> '{0,requestPayload,truncated}' FROM pg_temp.em('p65-2', 'POST_SALES')), 'true'::jsonb,
          'and replaced by its size');

-- metadata.integration: a code and a generic message, never the provider's text.
SELECT is((SELECT metadata #>> '{integration,error,code}' FROM insurance.risk_items WHERE id = pg_temp.item('p65-2')),
          'PROVIDER_REJECTED', 'metadata.integration carries the code');
SELECT is((SELECT metadata::text LIKE '%<html>%' FROM insurance.risk_items WHERE id = pg_temp.item('p65-2')), false,
          'and not the provider''s text');

-- The seed point: only the sales dispatch writes metadata.integration.
SELECT is(integrations.record_emission(pg_temp.item('p65-3'), 'PROVIDER_A', 'SALES_DISPATCH',
            '{"status": "SUCCESS", "externalId": "EXT-65"}', pg_temp.opts()) ->> 'status', 'SUCCESS', 'a sales dispatch');
SELECT lives_ok($$SELECT integrations.record_emission(pg_temp.item('p65-3'), 'PROVIDER_B', 'POST_SALES',
            '{"status": "FAILED", "code": "PROVIDER_REJECTED", "message": "no", "retryable": false}', pg_temp.opts());
                  SELECT integrations.record_emission(pg_temp.item('p65-3'), 'PROVIDER_B', 'BENEFICIARIES_SYNC',
            '{"status": "FAILED", "code": "PROVIDER_REJECTED", "message": "no", "retryable": false}', pg_temp.opts())$$,
          'then a failed post-sales and beneficiaries-sync emission');
SELECT is((SELECT (metadata -> 'integration') - 'updatedAt' FROM insurance.risk_items WHERE id = pg_temp.item('p65-3')),
          jsonb_build_object('state', 'SUCCESS', 'externalId', 'EXT-65', 'emissionId', (pg_temp.em('p65-3')).id,
                             'provider', 'PROVIDER_A', 'event', 'SALES_DISPATCH', 'error', null),
          'metadata.integration still tells the sales dispatch');

-- record_batch: a poisoned outcome in the middle of a batch.
SELECT is((SELECT jsonb_agg(x ->> 'status') FROM jsonb_array_elements(integrations.record_batch(jsonb_build_array(
            pg_temp.entry('{"status": "SUCCESS", "externalId": "EXT-4"}', 'p65-4'),
            pg_temp.entry('{"status": "FAILED", "code": "PROVIDER_UNAVAILABLE", "retryable": true, "httpStatus": "five hundred"}', 'p65-5'),
            pg_temp.entry('{"status": "SUCCESS", "externalId": "EXT-6"}', 'p65-6')), pg_temp.opts())) x),
          '["SUCCESS", "FAILED", "SUCCESS"]'::jsonb, 'a batch with a poisoned middle outcome records all three, in order');
SELECT is((SELECT (status, error_history #>> '{0,code}', next_retry_at IS NOT NULL)::text FROM pg_temp.em('p65-5')),
          '(FAILED,OUTCOME_UNRECORDABLE,t)', 'the poisoned one is FAILED with its own code and a retry');
SELECT is((SELECT jsonb_agg(x ->> 'status') FROM jsonb_array_elements(integrations.record_batch(jsonb_build_array(
            pg_temp.entry('{"status": "SUCCESS", "externalId": "EXT-1"}', 'p65-1'),
            jsonb_build_object('riskItemId', -1, 'provider', 'PROVIDER_A', 'event', 'SALES_DISPATCH',
                               'outcome', '{"status": "SUCCESS", "externalId": "X"}'::jsonb)), pg_temp.opts())) x),
          '["SUCCESS", "FAILED"]'::jsonb, 'an outcome for an item that does not exist is answered FAILED, the other stored');

SELECT pg_temp.as_operator();
SELECT * FROM finish();
ROLLBACK;
