-- The emission state machine: every transition, the backoff, metadata, outbox rows.
BEGIN;
\ir helpers/common.psql
SELECT plan(31);

INSERT INTO insurance.packages (uid, name, sales_integration_slug) VALUES ('pgtap-61', 'P', 'PROVIDER_A');
INSERT INTO insurance.package_variants (package_id, code, name)
  SELECT id, 'travel', 'Travel' FROM insurance.packages WHERE uid = 'pgtap-61';
INSERT INTO insurance.risk_items (package_id, policy_uid, variant)
  SELECT id, 'pol-' || n, 'travel' FROM insurance.packages, generate_series(1, 4) n WHERE uid = 'pgtap-61';
CREATE TEMP TABLE t_items ON COMMIT DROP AS
  SELECT policy_uid, id, uid FROM insurance.risk_items
   WHERE package_id = (SELECT id FROM insurance.packages WHERE uid = 'pgtap-61');
GRANT SELECT ON t_items TO insurance_service;
DELETE FROM outbox.http_requests;

CREATE FUNCTION pg_temp.item(p text) RETURNS bigint LANGUAGE sql AS $$ SELECT id FROM t_items WHERE policy_uid = p $$;
CREATE FUNCTION pg_temp.opts(max integer DEFAULT 3) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('maxAttempts', max, 'retryBaseSeconds', 60, 'retryCapSeconds', 3600,
                            'chatWebhookUrl', 'https://chat.example.com/hook') $$;
CREATE FUNCTION pg_temp.fail(retryable boolean, code text DEFAULT 'PROVIDER_UNAVAILABLE', status integer DEFAULT 503,
                             retry_after numeric DEFAULT NULL) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('status', 'FAILED', 'provider', 'PROVIDER_A', 'code', code, 'message', 'it broke',
                            'retryable', retryable, 'httpStatus', status, 'retryAfter', retry_after) $$;
CREATE FUNCTION pg_temp.ok(ext text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('status', 'SUCCESS', 'provider', 'PROVIDER_A', 'externalId', ext,
                            'response', jsonb_build_object('policyNumber', ext)) $$;
CREATE FUNCTION pg_temp.em(p text) RETURNS insurance.integration_emissions LANGUAGE sql AS $$
  SELECT * FROM insurance.integration_emissions WHERE risk_item_id = pg_temp.item(p) AND event = 'SALES_DISPATCH' $$;

-- As the service role, through its policies.
SELECT pg_temp.act_as('insurance_service');

-- Backoff bounds (now() is frozen inside this transaction; random() is not).
SELECT ok((SELECT min(d) >= interval '60 seconds' AND max(d) <= interval '120 seconds'
             FROM (SELECT integrations.retry_delay(2, 60, 21600) d FROM generate_series(1, 500)) s),
          'attempt 2: the delay lies in [base*2/2, base*2] = [60 s, 120 s]');
SELECT ok((SELECT max(d) - min(d) > interval '20 seconds'
             FROM (SELECT integrations.retry_delay(2, 60, 21600) d FROM generate_series(1, 500)) s),
          'the delay is jittered');
SELECT ok((SELECT min(d) >= interval '3 hours' AND max(d) <= interval '6 hours'
             FROM (SELECT integrations.retry_delay(30, 60, 21600) d FROM generate_series(1, 200)) s),
          'a late attempt is capped: [cap/2, cap]');
SELECT is(integrations.retry_delay(1, 60, 21600, 7200), interval '2 hours',
          'a longer Retry-After wins over the backoff');

-- (none) -> SUCCESS
SELECT is(integrations.record_emission(pg_temp.item('pol-1'), 'PROVIDER_A', 'SALES_DISPATCH', pg_temp.ok('EXT-1'), pg_temp.opts())
          ->> 'status', 'SUCCESS', '(none) -> SUCCESS');
SELECT is((SELECT (external_id, attempts, response ->> 'policyNumber', next_retry_at)::text FROM pg_temp.em('pol-1')),
          '(EXT-1,1,EXT-1,)', 'SUCCESS stores external_id, response and the attempt, no next retry');
SELECT is((SELECT (metadata -> 'integration') - 'updatedAt'::text FROM insurance.risk_items WHERE id = pg_temp.item('pol-1')),
          jsonb_build_object('state', 'SUCCESS', 'externalId', 'EXT-1', 'emissionId', (pg_temp.em('pol-1')).id,
                             'provider', 'PROVIDER_A', 'event', 'SALES_DISPATCH', 'error', null),
          'SUCCESS: metadata.integration says state, externalId, emissionId, error');
SELECT is((SELECT count(*)::int FROM outbox.http_requests), 0, 'SUCCESS enqueues nothing');

-- SUCCESS -> SUCCESS
SELECT is(integrations.record_emission(pg_temp.item('pol-1'), 'PROVIDER_A', 'SALES_DISPATCH', pg_temp.fail(true), pg_temp.opts())
          ->> 'status', 'SUCCESS', 'SUCCESS is final: a later failure changes nothing');
SELECT is((SELECT (external_id, attempts, error_history)::text FROM pg_temp.em('pol-1')), '(EXT-1,1,[])',
          'SUCCESS row untouched');

-- (none) -> FAILED
SELECT is(integrations.record_emission(pg_temp.item('pol-2'), 'PROVIDER_A', 'SALES_DISPATCH', pg_temp.fail(true), pg_temp.opts())
          ->> 'status', 'FAILED', '(none) -> FAILED on a retryable error');
SELECT ok((SELECT next_retry_at BETWEEN now() + interval '30 seconds' AND now() + interval '60 seconds' AND attempts = 1
             FROM pg_temp.em('pol-2')), 'FAILED: attempt 1, next retry within [base/2, base]');
SELECT is((SELECT (error_history -> 0) - 'at'::text FROM pg_temp.em('pol-2')),
          '{"code": "PROVIDER_UNAVAILABLE", "message": "it broke", "attempt": 1, "httpStatus": 503, "retryable": true,
            "requestPayload": null}'::jsonb,
          'error_history records code, message, HTTP status and attempt');
SELECT is((SELECT deliver_after FROM outbox.http_requests WHERE url = '/api/integrations/retry'
              AND body = jsonb_build_object('emissionId', (pg_temp.em('pol-2')).id)),
          (pg_temp.em('pol-2')).next_retry_at, 'FAILED enqueues the /retry at next_retry_at');
-- The notice as a person reads it in the chat, word for word.
SELECT is((SELECT body ->> 'text' FROM outbox.http_requests WHERE url = 'https://chat.example.com/hook'),
          format(':warning: emission FAILED: PROVIDER_A for risk item %s (PROVIDER_UNAVAILABLE), attempt 1 of 3, '
                 'next retry at %s', (SELECT uid FROM t_items WHERE policy_uid = 'pol-2'),
                 to_char((pg_temp.em('pol-2')).next_retry_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')),
          'FAILED enqueues a chat notice naming provider, item, code, attempt and next retry');
SELECT is((SELECT metadata #>> '{integration,state}' FROM insurance.risk_items WHERE id = pg_temp.item('pol-2')),
          'FAILED', 'FAILED: metadata says so');

-- FAILED -> FAILED
SELECT is(integrations.record_emission(pg_temp.item('pol-2'), 'PROVIDER_A', 'SALES_DISPATCH', pg_temp.fail(true), pg_temp.opts())
          ->> 'status', 'FAILED', 'FAILED -> FAILED on another retryable error');
SELECT ok((SELECT attempts = 2 AND jsonb_array_length(error_history) = 2
                  AND next_retry_at BETWEEN now() + interval '60 seconds' AND now() + interval '120 seconds'
             FROM pg_temp.em('pol-2')), 'FAILED again: attempts + 1, history appended, a longer backoff');
SELECT is((SELECT count(*)::int FROM outbox.http_requests WHERE url = '/api/integrations/retry'), 2,
          'each FAILED enqueues its own /retry');

-- FAILED -> ABANDONED at the attempt limit
SELECT is(integrations.record_emission(pg_temp.item('pol-2'), 'PROVIDER_A', 'SALES_DISPATCH', pg_temp.fail(true), pg_temp.opts())
          ->> 'status', 'ABANDONED', 'FAILED -> ABANDONED when attempts reach the maximum');
SELECT is((SELECT (attempts, next_retry_at)::text FROM pg_temp.em('pol-2')), '(3,)', 'ABANDONED: no next retry');
SELECT is((SELECT count(*)::int FROM outbox.http_requests WHERE url = '/api/integrations/retry'), 2,
          'ABANDONED enqueues no retry');
SELECT is((SELECT array_agg(body ->> 'text') FROM outbox.http_requests
            WHERE url = 'https://chat.example.com/hook' AND body ->> 'text' LIKE '%ABANDONED%'),
          ARRAY[format(':rotating_light: emission ABANDONED: PROVIDER_A for risk item %s (PROVIDER_UNAVAILABLE), '
                       'attempt 3 of 3, no automatic retry', (SELECT uid FROM t_items WHERE policy_uid = 'pol-2'))],
          'ABANDONED sends a chat notice, word for word');

-- (none) -> ABANDONED on a non-retryable error; FAILED -> SUCCESS
SELECT is(integrations.record_emission(pg_temp.item('pol-3'), 'PROVIDER_A', 'SALES_DISPATCH',
                                       pg_temp.fail(false, 'PROVIDER_REJECTED', 400), pg_temp.opts()) ->> 'status',
          'ABANDONED', '(none) -> ABANDONED on a non-retryable error');
SELECT is((SELECT metadata #>> '{integration,error,code}' FROM insurance.risk_items WHERE id = pg_temp.item('pol-3')),
          'PROVIDER_REJECTED', 'ABANDONED: metadata carries the error');
SELECT is(integrations.record_emission(pg_temp.item('pol-4'), 'PROVIDER_A', 'SALES_DISPATCH', pg_temp.fail(true), pg_temp.opts())
          ->> 'status', 'FAILED', 'a first failure');
SELECT is(integrations.record_emission(pg_temp.item('pol-4'), 'PROVIDER_A', 'SALES_DISPATCH', pg_temp.ok('EXT-4'), pg_temp.opts())
          - 'nextRetryAt' - 'error' - 'emissionId',
          jsonb_build_object('riskItemId', pg_temp.item('pol-4'), 'provider', 'PROVIDER_A', 'event', 'SALES_DISPATCH',
                             'status', 'SUCCESS', 'externalId', 'EXT-4', 'attempts', 2),
          'FAILED -> SUCCESS on the retry');
SELECT ok((SELECT next_retry_at IS NULL AND jsonb_array_length(error_history) = 1 FROM pg_temp.em('pol-4')),
          'FAILED -> SUCCESS clears the next retry and keeps the history');

-- Without a chat URL no notice is enqueued; MAIL_PROVIDER leaves metadata alone.
SELECT lives_ok($$SELECT integrations.record_emission(pg_temp.item('pol-4'), 'MAIL_PROVIDER', 'POLICY_CREATED',
                  pg_temp.fail(true), pg_temp.opts() - 'chatWebhookUrl')$$, 'a failure without a chat URL');
SELECT is((SELECT count(*)::int FROM outbox.http_requests WHERE url = 'https://chat.example.com/hook'), 5,
          'no chat notice without a chat URL');
SELECT is((SELECT metadata #>> '{integration,state}' FROM insurance.risk_items WHERE id = pg_temp.item('pol-4')),
          'SUCCESS', 'a MAIL_PROVIDER emission does not overwrite metadata.integration');

SELECT pg_temp.as_operator();
SELECT * FROM finish();
ROLLBACK;
