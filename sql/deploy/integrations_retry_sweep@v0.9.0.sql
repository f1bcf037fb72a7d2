-- Deploy insurance:integrations_retry_sweep to pg
-- The minute sweep (pg_cron, as insurance_cron): enqueue a /retry for each due FAILED
-- emission that has no pending outbox row (the delayed call was lost or is late), free
-- expired outbox leases and emission claims. A dead outbox row counts as pending and is
-- never touched (an operator retries it); delivered rows are left to the retention job
-- (insurance.purge_expired, OUTBOX_RETENTION).
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

CREATE FUNCTION integrations.sweep() RETURNS jsonb
LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
DECLARE
  _queued integer;
  _leases integer;
  _claims integer;
BEGIN
  PERFORM insurance.require_role('insurance_service', 'insurance_cron');
  SELECT count(outbox.http_post('/api/integrations/retry', pg_catalog.jsonb_build_object('emissionId', e.id),
                                '{}', NULL))
    INTO _queued
    FROM insurance.integration_emissions e
   WHERE e.status = 'FAILED' AND e.next_retry_at <= pg_catalog.now()
     AND NOT integrations.retry_pending(e.id);
  UPDATE outbox.http_requests o SET lease_until = NULL, leased_by = NULL
   WHERE o.delivered_at IS NULL AND o.dead_at IS NULL AND o.lease_until < pg_catalog.now();
  GET DIAGNOSTICS _leases = ROW_COUNT;
  DELETE FROM insurance.emission_claims c WHERE c.lease_until < pg_catalog.now();
  GET DIAGNOSTICS _claims = ROW_COUNT;
  RETURN pg_catalog.jsonb_build_object('retriesQueued', _queued, 'leasesFreed', _leases,
                                       'claimsFreed', _claims);
END
$$;
COMMENT ON FUNCTION integrations.sweep() IS
  'One pass of the retry sweep: queues /retry for due FAILED emissions without a pending call, frees expired outbox '
  'leases and emission claims; returns {retriesQueued, leasesFreed, claimsFreed}. Service role or insurance_cron.';
REVOKE ALL ON FUNCTION integrations.sweep() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION integrations.sweep() TO insurance_service, insurance_cron;

-- run_sweep: what the minute job calls: a sweep, and its time and result in insurance.job_runs.
CREATE FUNCTION integrations.run_sweep() RETURNS jsonb
LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
DECLARE
  _result jsonb := integrations.sweep();
BEGIN
  INSERT INTO insurance.job_runs AS j (job, last_run_at, last_result)
  VALUES ('retry_sweep', pg_catalog.now(), _result)
  ON CONFLICT (job) DO UPDATE SET last_run_at = excluded.last_run_at, last_result = excluded.last_result;
  RETURN _result;
END
$$;
COMMENT ON FUNCTION integrations.run_sweep() IS
  'integrations.sweep(), noting its time and result in insurance.job_runs (job retry_sweep); returns the sweep''s result. '
  'The minute pg_cron job; service role or insurance_cron.';
REVOKE ALL ON FUNCTION integrations.run_sweep() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION integrations.run_sweep() TO insurance_service, insurance_cron;
GRANT USAGE ON SCHEMA integrations TO insurance_cron;

RESET ROLE;
SELECT insurance.schedule_job('insurance-retry-sweep-' || current_database(), '* * * * *',
                              'SELECT integrations.run_sweep()');

COMMIT;
