-- The back-office's reads and its audited retries (dashboard_emissions, dashboard_outbox, dashboard_audit): what a session sees,
-- what a retry changes, the audit row it writes, and who may call it.
BEGIN;
\ir helpers/common.psql
SELECT plan(17);

INSERT INTO insurance.packages (uid, name) VALUES ('pgtap-71', 'P');
INSERT INTO insurance.package_variants (package_id, code, name) SELECT id, 'travel', 'Travel' FROM insurance.packages WHERE uid = 'pgtap-71';
INSERT INTO insurance.risk_items (package_id, policy_uid, variant) SELECT id, 'PGTAP-71', 'travel' FROM insurance.packages WHERE uid = 'pgtap-71';
INSERT INTO insurance.integration_emissions (risk_item_id, provider, event, status, attempts, error_history)
SELECT r.id, 'PROVIDER_A', 'SALES_DISPATCH', 'ABANDONED', 3,
       '[{"code": "PROVIDER_REJECTED", "requestPayload": {"headers": {"X-Api-Key": "***"}}}]'
  FROM insurance.risk_items r WHERE r.policy_uid = 'PGTAP-71';
DELETE FROM outbox.http_requests;
SELECT outbox.http_post('https://hooks.example.com/services/T0/SECRET?token=x', '{}', '{}', now() + interval '1 hour');
CREATE TEMP TABLE _em AS SELECT e.id FROM insurance.integration_emissions e JOIN insurance.risk_items r ON r.id = e.risk_item_id
                          WHERE r.policy_uid = 'PGTAP-71';
GRANT SELECT ON _em TO insurance_dashboard, insurance_holder;

SELECT pg_temp.act_as('insurance_dashboard', '{"sub": "7", "email": "ops@pgtap.invalid", "role": "dashboard"}');
SELECT is((dashboard.list_emissions('{ABANDONED}', 'PROVIDER_A', 'SALES_DISPATCH', NULL, NULL, NULL, 100) #>> '{items,0,id}')::bigint,
          (SELECT id FROM _em), 'the list filters by status, provider and event');
SELECT is(jsonb_array_length(dashboard.list_emissions(NULL, NULL, 'NO_SUCH_EVENT', NULL, NULL, NULL, 100) -> 'items'), 0,
          'an event filter with no match lists nothing');
SELECT is(dashboard.emission_detail((SELECT id FROM _em)) #>> '{emission,errorHistory,0,requestPayload,headers,X-Api-Key}', '***',
          'the detail shows the error history with its masked request payload');
SELECT is(dashboard.emission_detail((SELECT id FROM _em)) #>> '{riskItem,policyUid}', 'PGTAP-71', 'and its risk item');
SELECT throws_ok('SELECT dashboard.emission_detail(-1)', 'PT404', 'emission not found', 'an unknown emission is 404');
SELECT is(dashboard.list_outbox(false, NULL, 10) #>> '{items,0,url}', 'https://hooks.example.com/…',
          'the outbox shows where a row goes, never a webhook''s secret path');
SELECT pg_temp.as_operator();
UPDATE outbox.http_requests SET dead_at = now();
SELECT pg_temp.act_as('insurance_dashboard', '{"sub": "7", "email": "ops@pgtap.invalid", "role": "dashboard"}');
SELECT results_eq($$SELECT jsonb_array_length(dashboard.list_outbox(false, NULL, 10) -> 'items'),
                           jsonb_array_length(dashboard.list_outbox(true, NULL, 10) -> 'items')$$,
                  $$VALUES (0, 1)$$, 'a dead letter is listed with the dead, not with the waiting');

SELECT is(dashboard.retry_emissions(ARRAY[(SELECT id FROM _em)], 'backoffice') #>> '{0,status}', 'FAILED',
          'a retry restarts the ABANDONED emission');
SELECT pg_temp.as_operator();
SELECT results_eq($$SELECT actor, action, targets, result, details ->> 'via' FROM insurance.audit_log ORDER BY id DESC LIMIT 1$$,
                  $$SELECT 'dashboard:ops@pgtap.invalid', 'emissions.retry', jsonb_build_array((SELECT id FROM _em)), 'ok', 'backoffice'$$,
                  'and writes the audit row: the session''s user, the action, the ids, the result');
SELECT is((SELECT attempts FROM insurance.integration_emissions WHERE id = (SELECT id FROM _em)), 0, 'attempts start again');

SELECT pg_temp.act_as('insurance_dashboard', '{"sub": "7", "email": "ops@pgtap.invalid", "role": "dashboard"}');
SELECT is(dashboard.retry_outbox(ARRAY[(SELECT max(id) FROM outbox.http_requests), -5]),
          jsonb_build_array(jsonb_build_object('id', -5, 'result', 'not_found'),
                            jsonb_build_object('id', (SELECT max(id) FROM outbox.http_requests), 'result', 'queued')),
          'an outbox retry revives the dead letter and says which rows it queued');
SELECT is((SELECT dead_at FROM outbox.http_requests ORDER BY id DESC LIMIT 1), NULL, 'the row lives again');
SELECT is((SELECT actor || ' ' || action || ' ' || via FROM insurance.audit_log ORDER BY id DESC LIMIT 1),
          'dashboard:ops@pgtap.invalid outbox.retry backoffice', 'and is audited as the session''s user, via the back-office');
SELECT is(dashboard.list_audit(NULL, 1) #>> '{items,0,action}', 'outbox.retry', 'the audit page lists the newest first');
SELECT pg_temp.with_claims(NULL);
SELECT throws_ok($$SELECT dashboard.retry_emissions(ARRAY[(SELECT id FROM _em)], 'trpc')$$, 'PT401', NULL,
                 'without a session''s claims a retry is refused');
SELECT pg_temp.as_operator();

SELECT pg_temp.act_as('insurance_holder');
SELECT throws_ok($$SELECT dashboard.retry_emissions(ARRAY[1], 'trpc')$$, '42501', NULL, 'a holder may not retry');
SELECT pg_temp.as_login('insurance_app', 'insurance_channel');
SELECT throws_ok($$SELECT dashboard.retry_outbox(ARRAY[1])$$, '42501', NULL,
                 'the app login under another role is refused by the guard');
SELECT pg_temp.as_operator();

SELECT * FROM finish();
ROLLBACK;
