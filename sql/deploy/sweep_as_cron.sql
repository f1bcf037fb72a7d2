-- Deploy insurance:sweep_as_cron to pg
-- requires: retry_sweep_job
-- requires: cron_role
-- requires: retention_job
-- requires: sweep_heartbeat
-- The minute sweep (integrations.run_sweep(), since sweep_heartbeat) runs as insurance_cron
-- (a login that is no superuser and may only run the job functions), re-registered by
-- insurance.schedule_job(); and it no longer purges
-- delivered outbox rows, which the retention job keeps for OUTBOX_RETENTION instead of a
-- fixed week. (retry_sweep_job was reworked by the providers lane in this release: the
-- sweep is redefined here from that version, less the purge.)
BEGIN;
SET LOCAL ROLE insurance_owner;

-- sweep: one pass (a dead outbox row counts as pending and is never touched: an operator
-- retries it); returns {"retriesQueued", "leasesFreed", "claimsFreed"}. Delivered rows are
-- purged by the retention job (insurance.purge_expired, OUTBOX_RETENTION).
CREATE OR REPLACE FUNCTION integrations.sweep() RETURNS jsonb
LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
DECLARE
  _queued integer;
  _leases integer;
  _claims integer;
BEGIN
  PERFORM insurance.require_role('insurance_service');
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
GRANT EXECUTE ON FUNCTION integrations.sweep(), integrations.run_sweep() TO insurance_cron;
GRANT USAGE ON SCHEMA integrations TO insurance_cron;

RESET ROLE;
SELECT insurance.schedule_job('insurance-retry-sweep-' || current_database(), '* * * * *',
                              'SELECT integrations.run_sweep()');

COMMIT;
