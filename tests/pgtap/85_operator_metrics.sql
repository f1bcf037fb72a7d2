-- The database's gauges: emission totals kept by deltas, the outbox backlog, the sweep's heartbeat.
BEGIN;
\ir helpers/common.psql
SELECT plan(9);

INSERT INTO insurance.packages (uid, name) VALUES ('pgtap-85', 'P');
INSERT INTO insurance.package_variants (package_id, code, name)
  SELECT id, 'travel', 'Travel' FROM insurance.packages WHERE uid = 'pgtap-85';
INSERT INTO insurance.risk_items (package_id, policy_uid, variant)
  SELECT id, 'pgtap-85-' || n, 'travel' FROM insurance.packages, generate_series(1, 3) n WHERE uid = 'pgtap-85';
DELETE FROM outbox.http_requests;
CREATE FUNCTION pg_temp.count_of(_status text) RETURNS bigint LANGUAGE sql AS $$
  SELECT coalesce((SELECT (e ->> 'count')::bigint FROM jsonb_array_elements(insurance.read_metrics() -> 'emissions') e
                    WHERE e ->> 'status' = _status AND e ->> 'provider' = 'PGTAP_85'), 0) $$;

INSERT INTO insurance.integration_emissions (risk_item_id, provider, event, status, next_retry_at)
  SELECT id, 'PGTAP_85', 'SALES_DISPATCH', 'FAILED', now() FROM insurance.risk_items WHERE policy_uid LIKE 'pgtap-85-%';
SELECT is(pg_temp.count_of('FAILED'), 3::bigint, 'three inserted FAILED emissions count three');

UPDATE insurance.integration_emissions SET status = 'SUCCESS', next_retry_at = NULL
 WHERE provider = 'PGTAP_85' AND risk_item_id = (SELECT id FROM insurance.risk_items WHERE policy_uid = 'pgtap-85-1');
UPDATE insurance.integration_emissions SET status = 'ABANDONED', next_retry_at = NULL
 WHERE provider = 'PGTAP_85' AND risk_item_id = (SELECT id FROM insurance.risk_items WHERE policy_uid = 'pgtap-85-2');
UPDATE insurance.integration_emissions SET attempts = 2 WHERE provider = 'PGTAP_85';
SELECT results_eq($$VALUES (pg_temp.count_of('SUCCESS'), pg_temp.count_of('FAILED'), pg_temp.count_of('ABANDONED'))$$,
                  $$VALUES (1::bigint, 1::bigint, 1::bigint)$$,
                  'a transition moves one count; an update that keeps the status moves none');
SELECT is((SELECT count(*) FROM insurance.emission_count_deltas), 0::bigint, 'reading folds every delta into the totals');

DELETE FROM insurance.risk_items WHERE policy_uid = 'pgtap-85-3';
SELECT is(pg_temp.count_of('FAILED'), 0::bigint, 'a deleted emission (cascade) leaves the count, at 0');

SELECT outbox.http_post('/api/integrations/retry', '{"emissionId": 1}', '{}', now() - interval '90 seconds');
SELECT outbox.http_post('/api/integrations/retry', '{"emissionId": 2}', '{}', now() + interval '1 hour');
SELECT is((insurance.read_metrics() ->> 'outboxPending')::int, 2, 'pending: every undelivered row');
-- http_post never enqueues in the past: make the first row overdue by hand.
SELECT pg_temp.age_rows('outbox.http_requests', '90 seconds', $$body ->> 'emissionId' = '1'$$);
SELECT ok((insurance.read_metrics() ->> 'outboxOldestPendingAgeSeconds')::numeric BETWEEN 89 AND 91,
          'oldest pending age: how long the most overdue row has waited');

DELETE FROM insurance.job_runs;
SELECT is(insurance.read_metrics() -> 'retrySweepLastRunAt', 'null'::jsonb, 'no sweep yet: null');
SELECT integrations.run_sweep();
SELECT ok((insurance.read_metrics() ->> 'retrySweepLastRunAt')::numeric >= extract(epoch FROM now()) - 1,
          'run_sweep notes when it ran');

SELECT pg_temp.act_as('insurance_holder');
SELECT throws_ok('SELECT insurance.read_metrics()', '42501', NULL, 'a holder may not read the gauges');
SELECT pg_temp.as_operator();

SELECT * FROM finish();
ROLLBACK;
