-- Deploy insurance:integrations_retry_sweep to pg
-- The minute sweep (pg_cron, as insurance_cron): enqueue a /retry for each due FAILED
-- emission that has no pending outbox row (the delayed call was lost or is late), free
-- expired outbox leases and emission claims. A dead outbox row counts as pending and is
-- never touched (an operator retries it); delivered rows are left to the retention job
-- (insurance.purge_expired, OUTBOX_RETENTION).
-- Reworked after v1.0.0 (issue 42): a paused provider's emissions are not queued (they wait
-- without spending attempts); a pause whose `until` has come ends here (audited as
-- providers.resume by the schedule), and its due emissions are queued in the same pass; the
-- answer times of past minutes (insurance.provider_call_minutes) are folded into one row per
-- minute and target, and minutes older than a day dropped. Restated whole (CREATE OR REPLACE).
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

-- sweep(): one pass. Its answer has retriesQueued, leasesFreed, claimsFreed, and pausesEnded and
-- callMinutesFolded when there were any.
CREATE OR REPLACE FUNCTION integrations.sweep() RETURNS jsonb
LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
DECLARE
  _queued integer;
  _leases integer;
  _claims integer;
  _ended jsonb;
  _folded integer;
BEGIN
  PERFORM insurance.require_role('insurance_service', 'insurance_cron');
  WITH ended AS (
    DELETE FROM insurance.provider_pauses z WHERE z.until <= pg_catalog.now() RETURNING z.provider, z.until
  )
  SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object('provider', e.provider, 'until', e.until)
                              ORDER BY e.provider)
    INTO _ended FROM ended e;
  PERFORM insurance.record_audit('system:schedule', 'providers.resume', pg_catalog.jsonb_build_array(p ->> 'provider'),
                                 'ok', pg_catalog.jsonb_build_object('endedBy', 'schedule', 'until', p -> 'until'))
     FROM pg_catalog.jsonb_array_elements(coalesce(_ended, '[]')) p;
  SELECT count(outbox.http_post('/api/integrations/retry', pg_catalog.jsonb_build_object('emissionId', e.id),
                                '{}', NULL))
    INTO _queued
    FROM insurance.integration_emissions e
   WHERE e.status = 'FAILED' AND e.next_retry_at <= pg_catalog.now()
     AND NOT integrations.retry_pending(e.id)
     AND NOT EXISTS (SELECT FROM insurance.provider_pauses z
                      WHERE z.provider = e.provider AND (z.until IS NULL OR z.until > pg_catalog.now()));
  UPDATE outbox.http_requests o SET lease_until = NULL, leased_by = NULL
   WHERE o.delivered_at IS NULL AND o.dead_at IS NULL AND o.lease_until < pg_catalog.now();
  GET DIAGNOSTICS _leases = ROW_COUNT;
  DELETE FROM insurance.emission_claims c WHERE c.lease_until < pg_catalog.now();
  GET DIAGNOSTICS _claims = ROW_COUNT;
  -- Past minutes' call rows folded into one per (minute, target); older than a day dropped.
  WITH past AS (
    DELETE FROM insurance.provider_call_minutes m
     WHERE NOT m.folded AND m.minute < pg_catalog.date_trunc('minute', pg_catalog.now())
    RETURNING m.minute, m.target, m.calls, m.failures, m.buckets
  ), folded AS (
    INSERT INTO insurance.provider_call_minutes (minute, target, calls, failures, buckets, folded)
    SELECT p.minute, p.target, sum(p.calls), sum(p.failures),
           ARRAY(SELECT sum(b.n)::integer FROM past q CROSS JOIN LATERAL pg_catalog.unnest(q.buckets) WITH ORDINALITY b(n, i)
                  WHERE q.minute = p.minute AND q.target = p.target GROUP BY b.i ORDER BY b.i), true
      FROM past p GROUP BY p.minute, p.target
    RETURNING 1
  )
  SELECT count(*) INTO _folded FROM folded;
  DELETE FROM insurance.provider_call_minutes m WHERE m.minute < pg_catalog.now() - interval '1 day';
  RETURN pg_catalog.jsonb_build_object('retriesQueued', _queued, 'leasesFreed', _leases, 'claimsFreed', _claims)
         || CASE WHEN _ended IS NOT NULL THEN pg_catalog.jsonb_build_object('pausesEnded', _ended) ELSE '{}' END
         || CASE WHEN _folded > 0 THEN pg_catalog.jsonb_build_object('callMinutesFolded', _folded) ELSE '{}' END;
END
$$;
COMMENT ON FUNCTION integrations.sweep() IS
  'One pass of the retry sweep: ends the pauses whose time has come (audited providers.resume by system:schedule), queues '
  '/retry for due FAILED emissions of providers not paused without a pending call, frees expired outbox leases and '
  'emission claims, folds past minutes of insurance.provider_call_minutes and drops those older than a day; returns '
  '{retriesQueued, leasesFreed, claimsFreed, pausesEnded?, callMinutesFolded?}. Service role or insurance_cron.';
REVOKE ALL ON FUNCTION integrations.sweep() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION integrations.sweep() TO insurance_service, insurance_cron;

-- run_sweep: what the minute job calls: a sweep, and its time and result in insurance.job_runs.
CREATE OR REPLACE FUNCTION integrations.run_sweep() RETURNS jsonb
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

COMMIT;
