-- The minute sweep and its pg_cron job; the dashboard's retry_from_backoffice.
BEGIN;
\ir helpers/common.psql
SELECT plan(12);

DELETE FROM outbox.http_requests;
INSERT INTO insurance.packages (uid, name) VALUES ('pgtap-64', 'P');
INSERT INTO insurance.package_variants (package_id, code, name)
  SELECT id, 'travel', 'Travel' FROM insurance.packages WHERE uid = 'pgtap-64';
INSERT INTO insurance.risk_items (package_id, policy_uid, variant)
  SELECT id, 'pgtap-64-' || n, 'travel' FROM insurance.packages, generate_series(1, 3) n WHERE uid = 'pgtap-64';
INSERT INTO insurance.integration_emissions (risk_item_id, provider, event, status, next_retry_at, attempts, external_id)
  SELECT id, 'PROVIDER_A', 'SALES_DISPATCH',
         (ARRAY['FAILED', 'ABANDONED', 'SUCCESS'])[substr(policy_uid, 10)::int],
         CASE policy_uid WHEN 'pgtap-64-1' THEN now() - interval '1 minute' END, 8,
         CASE policy_uid WHEN 'pgtap-64-3' THEN 'EXT' END
    FROM insurance.risk_items WHERE policy_uid LIKE 'pgtap-64-%';
CREATE TEMP TABLE t AS
  SELECT e.status, e.id FROM insurance.integration_emissions e JOIN insurance.risk_items r ON r.id = e.risk_item_id
   WHERE r.policy_uid LIKE 'pgtap-64-%';
GRANT SELECT ON t TO insurance_dashboard;
INSERT INTO outbox.http_requests (url, body, lease_until, leased_by)
  VALUES ('https://x.example.com/', '{}', now() - interval '1 minute', 'dead-worker');
INSERT INTO insurance.emission_claims (risk_item_id, provider, event, claimed_by, lease_until)
  SELECT id, 'PROVIDER_A', 'X', 'dead', now() - interval '1 minute' FROM insurance.risk_items WHERE policy_uid = 'pgtap-64-1';

SELECT is(integrations.sweep(), '{"retriesQueued": 1, "leasesFreed": 1, "claimsFreed": 1}'::jsonb,
          'the sweep enqueues the due FAILED emission and frees expired leases and claims');
SELECT is((SELECT body FROM outbox.http_requests WHERE url = '/api/integrations/retry'),
          jsonb_build_object('emissionId', (SELECT id FROM t WHERE status = 'FAILED')), 'a /retry of that emission');
SELECT is(integrations.sweep() ->> 'retriesQueued', '0', 'a pending /retry is not enqueued twice');
UPDATE outbox.http_requests SET delivered_at = now() - interval '8 days';
SELECT is((SELECT count(*)::int FROM outbox.http_requests, integrations.sweep() WHERE delivered_at IS NOT NULL), 2,
          'delivered rows are left to the retention job (OUTBOX_RETENTION)');

-- retry_from_backoffice, through the dashboard's audited entry point
DELETE FROM outbox.http_requests;
SELECT pg_temp.act_as('insurance_dashboard', '{"role": "dashboard", "email": "ops@example.com", "sub": "1"}');
SELECT is(dashboard.retry_emissions(ARRAY(SELECT id FROM t ORDER BY id), 'trpc'),
          (SELECT jsonb_agg(jsonb_build_object('id', id, 'status', CASE status WHEN 'SUCCESS' THEN 'SUCCESS' ELSE 'FAILED' END,
                                               'queued', status <> 'SUCCESS') ORDER BY id) FROM t),
          'FAILED and ABANDONED are queued (as FAILED), SUCCESS is left alone');
SELECT pg_temp.as_operator();
SELECT is((SELECT count(*)::int FROM outbox.http_requests WHERE url = '/api/integrations/retry'), 2,
          'the same /retry call as the automatic retry, one per emission');
SELECT is((SELECT (status, attempts, next_retry_at = now())::text FROM insurance.integration_emissions
            WHERE id = (SELECT id FROM t WHERE status = 'ABANDONED')), '(FAILED,0,t)',
          'an ABANDONED emission restarts: FAILED, due now, attempts from 0');
SELECT is((SELECT status FROM insurance.integration_emissions WHERE id = (SELECT id FROM t WHERE status = 'SUCCESS')),
          'SUCCESS', 'SUCCESS stays SUCCESS');
SELECT pg_temp.act_as('insurance_dashboard', '{"role": "dashboard", "email": "ops@example.com", "sub": "1"}');
SELECT is(jsonb_array_length(dashboard.retry_emissions(ARRAY(SELECT id FROM t), 'trpc')), 3, 'a second retry answers too');
SELECT pg_temp.as_operator();
SELECT is((SELECT count(*)::int FROM outbox.http_requests WHERE url = '/api/integrations/retry'), 2,
          'and does not queue a second /retry while one is pending');
SELECT pg_temp.act_as('insurance_dashboard', '{"role": "dashboard", "email": "ops@example.com", "sub": "1"}');
SELECT throws_ok($$SELECT dashboard.retry_emissions(ARRAY[-5::bigint], 'trpc')$$, 'PT404', 'emission not found',
                 'an unknown id is PT404 NOT_FOUND');
SELECT pg_temp.as_operator();

-- The pg_cron job is registered for this database (in the cluster's cron database).
SELECT is((SELECT x FROM dblink(format('host=%s port=%s dbname=%s user=%s',
                                       split_part(current_setting('unix_socket_directories'), ',', 1),
                                       current_setting('port'), current_setting('cron.database_name'), current_user),
                                format('SELECT schedule || '' '' || command || '' '' || database || '' as '' || username FROM cron.job WHERE jobname = %L',
                                       'insurance-retry-sweep-' || current_database())) AS j(x text)),
          '* * * * * SELECT integrations.run_sweep() ' || current_database() || ' as insurance_cron',
          'the sweep runs every minute in this database, as insurance_cron (no superuser)');

SELECT * FROM finish();
ROLLBACK;
