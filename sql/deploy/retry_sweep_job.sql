-- Deploy insurance:retry_sweep_job to pg
-- requires: retry_sweep_job@v1.0
-- requires: outbox_functions
-- requires: entry_point_roles
-- The sweep never resurrects a dead outbox row, and checks the switched role. The pg_cron
-- job registered by @v1.0 calls the function by name and stays as it is.
BEGIN;
SET LOCAL ROLE insurance_owner;

-- sweep: one pass (a dead outbox row counts as pending and is never touched: an operator
-- retries it); returns {"retriesQueued", "leasesFreed", "claimsFreed", "purged"}.
CREATE OR REPLACE FUNCTION integrations.sweep() RETURNS jsonb
LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
DECLARE
  _queued integer;
  _leases integer;
  _claims integer;
  _purged integer;
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
  DELETE FROM outbox.http_requests o WHERE o.delivered_at < pg_catalog.now() - interval '7 days';
  GET DIAGNOSTICS _purged = ROW_COUNT;
  RETURN pg_catalog.jsonb_build_object('retriesQueued', _queued, 'leasesFreed', _leases,
                                       'claimsFreed', _claims, 'purged', _purged);
END
$$;
COMMIT;
