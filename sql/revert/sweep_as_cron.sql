-- Revert insurance:sweep_as_cron from pg: the retry_sweep_job sweep (with its weekly purge), and the
-- job (run_sweep, as sweep_heartbeat left it) registered again as the migrating user.
BEGIN;
SELECT insurance.unschedule_job('insurance-retry-sweep-' || current_database());
REVOKE USAGE ON SCHEMA integrations FROM insurance_cron;
SET LOCAL ROLE insurance_owner;
REVOKE ALL ON FUNCTION integrations.sweep(), integrations.run_sweep() FROM insurance_cron;

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
RESET ROLE;
DO $$
DECLARE
  _cron_db text := current_setting('cron.database_name', true);
  _conn text;
  _job text := 'insurance-retry-sweep-' || current_database();
  _id bigint;
BEGIN
  IF _cron_db IS NULL THEN
    RAISE NOTICE 'retry sweep not scheduled: pg_cron is not loaded in this cluster';
    RETURN;
  END IF;
  _conn := format('host=%s port=%s dbname=%s user=%s',
                  split_part(current_setting('unix_socket_directories'), ',', 1),
                  current_setting('port'), _cron_db, current_user);
  IF NOT EXISTS (SELECT FROM public.dblink(_conn, 'SELECT 1 FROM pg_extension WHERE extname = ''pg_cron''')
                              AS t(x int)) THEN
    RAISE NOTICE 'retry sweep not scheduled: pg_cron is not installed in database %', _cron_db;
    RETURN;
  END IF;
  SELECT j INTO _id FROM public.dblink(_conn, format(
    'SELECT cron.schedule_in_database(%L, %L, %L, %L)',
    _job, '* * * * *', 'SELECT integrations.run_sweep()', current_database())) AS t(j bigint);
  RAISE NOTICE 'retry sweep scheduled: pg_cron job % (%) in database %, every minute', _id, _job, _cron_db;
EXCEPTION WHEN OTHERS THEN
  -- e.g. a migrating role that dblink may not connect as: say so, deploy anyway.
  RAISE NOTICE '%', format('retry sweep not scheduled: %s (schedule it in the cron database: '
                           'SELECT cron.schedule_in_database(%L, %L, %L, %L))',
                           SQLERRM, _job, '* * * * *', 'SELECT integrations.run_sweep()', current_database());
END
$$;

COMMIT;
