-- Health at a glance: integrations._note_calls (record_calls' helper) notes each provider's calls, failures and answer times per
-- minute (one appended row per batch and provider), the sweep folds a past minute into one row,
-- and providers_health answers each provider's and the webhooks' minutes, p95 and pause.
BEGIN;
\ir helpers/common.psql
SELECT plan(9);

DELETE FROM insurance.provider_call_minutes;
-- Two batches this minute: PROVIDER_HA's 20 calls (one failed, answers 30..600 ms), PROVIDER_HB's 1.
SELECT pg_temp.act_as('insurance_service');
SELECT integrations._note_calls((SELECT jsonb_agg(jsonb_build_object('target', 'PROVIDER_HA', 'ms', n * 30, 'failed', n = 20))
                                   FROM generate_series(1, 20) n)) IS NULL AS noted;
SELECT integrations._note_calls('[{"target": "PROVIDER_HB", "ms": 12, "failed": false},
                                  {"target": "PROVIDER_HB", "ms": null, "failed": true}]') IS NULL AS noted;
SELECT throws_ok($$INSERT INTO insurance.provider_call_minutes (minute, target, calls, failures, buckets) VALUES (now(), 'X', 1, 0, '{}'::integer[])$$,
                 '42501', NULL, 'the service role does not write the minutes itself');
SELECT pg_temp.as_operator();
SELECT is((SELECT count(*) FROM insurance.provider_call_minutes), 2::bigint, 'one appended row per batch and provider (no answer time: not a call)');

SELECT is((SELECT row(calls, failures)::text FROM insurance.provider_call_minutes WHERE target = 'PROVIDER_HA'), '(20,1)',
          'calls and failures of the minute');

-- Move the rows an hour back (as if written then), add a row of this minute, and fold.
UPDATE insurance.provider_call_minutes SET minute = minute - interval '1 hour';
SELECT pg_temp.act_as('insurance_service');
SELECT integrations._note_calls('[{"target": "PROVIDER_HA", "ms": 40, "failed": false}]') IS NULL AS noted;
SELECT pg_temp.as_operator();
INSERT INTO insurance.provider_call_minutes (minute, target, calls, failures, buckets)
SELECT minute, target, calls, failures, buckets FROM insurance.provider_call_minutes WHERE target = 'PROVIDER_HA' AND minute < now() - interval '30 minutes';
SELECT is((integrations.sweep() ->> 'callMinutesFolded')::int, 2, 'the sweep folds each past (minute, target) into one row');
SELECT is((SELECT row(count(*), sum(calls))::text FROM insurance.provider_call_minutes WHERE target = 'PROVIDER_HA' AND folded), '(1,40)',
          'the folded row holds both rows'' calls; this minute''s row waits');

INSERT INTO insurance.provider_pauses (provider, until) VALUES ('PROVIDER_HB', now() + interval '2 hours');
SELECT pg_temp.act_as('insurance_dashboard', '{"sub": "1", "role": "dashboard", "email": "ops@pgtap.invalid"}');
CREATE TEMP TABLE health AS SELECT dashboard.providers_health(3) AS h;
SELECT is((SELECT jsonb_agg(jsonb_build_object('p', p ->> 'provider', 'calls', p -> 'calls', 'failures', p -> 'failures',
                                                'p95Ms', p -> 'p95Ms', 'slots', jsonb_array_length(p -> 'slots'),
                                                'paused', p -> 'paused' IS NOT NULL AND p -> 'paused' <> 'null')
                            ORDER BY ord)
             FROM health, jsonb_array_elements(h -> 'providers') WITH ORDINALITY AS x(p, ord)
            WHERE p ->> 'provider' IN ('PROVIDER_HA', 'PROVIDER_HB', 'WEBHOOKS')),
          '[{"p": "PROVIDER_HA", "calls": 41, "failures": 2, "p95Ms": 800, "slots": 2, "paused": false},
            {"p": "PROVIDER_HB", "calls": 1, "failures": 0, "p95Ms": 25, "slots": 1, "paused": true},
            {"p": "WEBHOOKS", "calls": 0, "failures": 0, "p95Ms": null, "slots": 0, "paused": false}]'::jsonb,
          'each provider''s calls, failures and p95 over the window, its slots, its pause; the webhooks last');
SELECT throws_ok($$SELECT dashboard.providers_health(0)$$, 'PT400', 'hours must be between 1 and 24', 'a window of 1 to 24 hours');
SELECT pg_temp.as_operator();

-- The worker's outcomes: partner webhooks' answer times noted as WEBHOOKS, then recorded as before.
INSERT INTO outbox.http_requests (url, body, channel_id, lease_until, leased_by)
VALUES ('https://hooks.pgtap.invalid/h', '{}', '00000000-0000-4000-8000-000000000081', now() + interval '1 minute', 'w81');
SELECT pg_temp.act_as('insurance_service');
SELECT is(outbox.record_timed_deliveries('w81', jsonb_build_array(jsonb_build_object(
            'id', (SELECT max(id) FROM outbox.http_requests), 'status', 200, 'error', null, 'ms', 120)), 20),
          1, 'the delivery is recorded as record_deliveries records it');
SELECT pg_temp.as_operator();
SELECT is((SELECT row(sum(calls), sum(failures))::text FROM insurance.provider_call_minutes WHERE target = 'WEBHOOKS'),
          '(1,0)', 'and its answer time noted for the webhooks');

SELECT * FROM finish();
ROLLBACK;
