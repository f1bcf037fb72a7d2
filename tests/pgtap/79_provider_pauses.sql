-- A paused insurer: begin_batch claims none of its keys (no provider call, no attempt spent) and
-- keeps a first emission as FAILED of 0 attempts; the sweep queues none of its emissions;
-- resuming (by hand, or by the sweep once `until` has come) queues them, once; every pause and
-- resume is audited.
BEGIN;
\ir helpers/common.psql
SELECT plan(19);

INSERT INTO insurance.packages (uid, name, sales_integration_slug) VALUES ('pgtap-79', 'Pause gold', 'PROVIDER_PZ');
INSERT INTO insurance.package_variants (package_id, code, name)
  SELECT id, 'travel', 'Travel' FROM insurance.packages WHERE uid = 'pgtap-79';
INSERT INTO insurance.risk_items (package_id, policy_uid, variant)
  SELECT id, 'pgtap-79-' || n, 'travel' FROM insurance.packages, generate_series(1, 2) n WHERE uid = 'pgtap-79';
CREATE TEMP TABLE items AS SELECT id, policy_uid FROM insurance.risk_items WHERE policy_uid LIKE 'pgtap-79-%';
GRANT SELECT ON items TO insurance_service, insurance_dashboard;
CREATE TEMP TABLE answers (n serial, a jsonb);
GRANT ALL ON answers TO insurance_service;
GRANT ALL ON SEQUENCE answers_n_seq TO insurance_service;

SELECT is(integrations.pause_provider('PROVIDER_PZ', NULL) - 'pausedAt',
          '{"provider": "PROVIDER_PZ", "paused": true, "until": null}', 'a provider is paused until resumed');

SELECT pg_temp.act_as('insurance_service');
INSERT INTO answers (a) SELECT integrations.begin_batch(jsonb_build_array(
  jsonb_build_object('riskItemId', (SELECT id FROM items WHERE policy_uid = 'pgtap-79-1'), 'provider', NULL, 'event', 'SALES_DISPATCH')),
  'pgtap', 60) -> 0;
SELECT is((SELECT a - 'emissionId' - 'riskItemId' - 'riskItemUid' FROM answers WHERE n = 1),
          '{"claimed": false, "status": "PAUSED", "attempts": 0, "pausedUntil": null, "provider": "PROVIDER_PZ", "event": "SALES_DISPATCH"}',
          'its key is not claimed: PAUSED, no attempt');
SELECT pg_temp.as_operator();
SELECT is((SELECT count(*) FROM insurance.emission_claims c JOIN items i ON i.id = c.risk_item_id), 0::bigint,
          'no claim was taken');
SELECT is((SELECT row(e.status, e.attempts, e.next_retry_at <= now(), e.id = (SELECT (a ->> 'emissionId')::bigint FROM answers WHERE n = 1))::text
             FROM insurance.integration_emissions e JOIN items i ON i.id = e.risk_item_id),
          '(FAILED,0,t,t)', 'the first emission waits as FAILED, 0 attempts, due (the answer names it)');

SELECT pg_temp.act_as('insurance_service');
INSERT INTO answers (a) SELECT integrations.begin_batch(jsonb_build_array(
  jsonb_build_object('riskItemId', (SELECT id FROM items WHERE policy_uid = 'pgtap-79-1'), 'provider', NULL, 'event', 'SALES_DISPATCH'),
  jsonb_build_object('emissionId', (SELECT (a ->> 'emissionId')::bigint FROM answers WHERE n = 1))), 'pgtap', 60) -> 1;
SELECT is((SELECT a ->> 'status' FROM answers WHERE n = 2), 'PAUSED', 'its /retry is not claimed either');
SELECT pg_temp.as_operator();
SELECT is((SELECT count(*) FROM insurance.integration_emissions e JOIN items i ON i.id = e.risk_item_id), 1::bigint,
          'asked again, the same emission waits: none doubled');

SELECT is((SELECT count(*) FROM outbox.http_requests WHERE url = '/api/integrations/retry'
             AND (body ->> 'emissionId')::bigint = (SELECT (a ->> 'emissionId')::bigint FROM answers WHERE n = 1)), 0::bigint,
          'nothing is queued for it yet');
SELECT integrations.sweep() IS NOT NULL AS swept;
SELECT is((SELECT count(*) FROM outbox.http_requests WHERE url = '/api/integrations/retry'
             AND (body ->> 'emissionId')::bigint = (SELECT (a ->> 'emissionId')::bigint FROM answers WHERE n = 1)), 0::bigint,
          'the sweep queues no retry of a paused provider');

-- Pause and resume from the back-office: audited.
SELECT pg_temp.act_as('insurance_dashboard', '{"sub": "1", "role": "dashboard", "email": "ops@pgtap.invalid"}');
SELECT throws_ok($$SELECT dashboard.pause_provider('PROVIDER_PZ', now() - interval '1 minute', 'backoffice')$$, 'PT400',
                 'until must be in the future', 'an end in the past is refused');
SELECT throws_ok($$SELECT dashboard.pause_provider('provider z; drop', NULL, 'backoffice')$$, 'PT400',
                 'provider must be a code such as PROVIDER_A', 'a bad code is refused');
SELECT is(dashboard.resume_provider('PROVIDER_PZ', 'backoffice') - 'provider',
          '{"paused": false, "wasPaused": true, "retriesQueued": 1}', 'resuming queues the emission that waited');
SELECT pg_temp.as_operator();
SELECT is((SELECT count(*) FROM outbox.http_requests WHERE url = '/api/integrations/retry'
             AND (body ->> 'emissionId')::bigint = (SELECT (a ->> 'emissionId')::bigint FROM answers WHERE n = 1)), 1::bigint,
          'one /retry of it');
SELECT is((SELECT row(actor, action, via, targets)::text FROM insurance.audit_log WHERE action = 'providers.resume' ORDER BY id DESC LIMIT 1),
          '(dashboard:ops@pgtap.invalid,providers.resume,backoffice,"[""PROVIDER_PZ""]")', 'the resume is audited');
SELECT pg_temp.act_as('insurance_service');
SELECT is(integrations.begin_batch(jsonb_build_array(
            jsonb_build_object('emissionId', (SELECT (a ->> 'emissionId')::bigint FROM answers WHERE n = 1))), 'pgtap', 60) -> 0 ->> 'claimed',
          'true', 'once resumed, its key is claimed: the insurer is called');
SELECT pg_temp.as_operator();

-- A pause with an end: the sweep ends it when its time has come, audited, and queues what waited.
SELECT pg_temp.act_as('insurance_dashboard', '{"sub": "1", "role": "dashboard", "email": "ops@pgtap.invalid"}');
SELECT is(dashboard.pause_provider('PROVIDER_PZ', now() + interval '1 hour', 'backoffice') ->> 'until',
          to_jsonb(now() + interval '1 hour') #>> '{}', 'paused until a time');
SELECT pg_temp.as_operator();
SELECT is((SELECT count(*) FROM insurance.audit_log WHERE action = 'providers.pause' AND via = 'backoffice'
              AND details ? 'until'), 1::bigint, 'the pause is audited with its end');
SELECT pg_temp.act_as('insurance_service');
INSERT INTO answers (a) SELECT integrations.begin_batch(jsonb_build_array(
  jsonb_build_object('riskItemId', (SELECT id FROM items WHERE policy_uid = 'pgtap-79-2'), 'provider', NULL, 'event', 'SALES_DISPATCH')),
  'pgtap', 60) -> 0;
SELECT pg_temp.as_operator();
SELECT pg_temp.age_rows('insurance.provider_pauses', interval '2 hours', $$provider = 'PROVIDER_PZ'$$);
SELECT is(integrations.sweep() -> 'pausesEnded' -> 0 ->> 'provider', 'PROVIDER_PZ', 'the sweep ends a pause whose time has come');
SELECT is((SELECT row(actor, details ->> 'endedBy')::text FROM insurance.audit_log WHERE action = 'providers.resume' ORDER BY id DESC LIMIT 1),
          '(system:schedule,schedule)', 'audited as the schedule''s');
SELECT is((SELECT count(*) FROM outbox.http_requests WHERE url = '/api/integrations/retry'
             AND (body ->> 'emissionId')::bigint = (SELECT (a ->> 'emissionId')::bigint FROM answers WHERE n = 3)), 1::bigint,
          'and queues, in the same pass, what waited during it');

SELECT * FROM finish();
ROLLBACK;
