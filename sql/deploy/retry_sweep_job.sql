-- Deploy insurance:retry_sweep_job to pg
-- requires: emission_state_machine
-- requires: dispatch_triggers
-- requires: cron_role
-- requires: entry_point_roles
-- Rework: the minute sweep runs as insurance_cron (no superuser); sweep() starts with its
-- require_role guard; delivered outbox rows are purged by the retention job (OUTBOX_RETENTION)
-- instead of here.
BEGIN;
SET LOCAL ROLE insurance_owner;

-- sweep: one pass; returns {"retriesQueued", "leasesFreed", "claimsFreed"}.
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
   WHERE o.delivered_at IS NULL AND o.lease_until < pg_catalog.now();
  GET DIAGNOSTICS _leases = ROW_COUNT;
  DELETE FROM insurance.emission_claims c WHERE c.lease_until < pg_catalog.now();
  GET DIAGNOSTICS _claims = ROW_COUNT;
  RETURN pg_catalog.jsonb_build_object('retriesQueued', _queued, 'leasesFreed', _leases,
                                       'claimsFreed', _claims);
END
$$;
REVOKE ALL ON FUNCTION integrations.sweep() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION integrations.sweep() TO insurance_service, insurance_app, insurance_cron;
GRANT USAGE ON SCHEMA integrations TO insurance_cron;

RESET ROLE;
SELECT insurance.schedule_job('insurance-retry-sweep-' || current_database(), '* * * * *',
                              'SELECT integrations.sweep()');

COMMIT;
