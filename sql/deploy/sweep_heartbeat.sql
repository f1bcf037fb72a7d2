-- Deploy insurance:sweep_heartbeat to pg
-- requires: retry_sweep_job
-- When the retry sweep last ran (insurance_retry_sweep_last_run_timestamp_seconds): pg_cron
-- keeps its run history in another database, out of the app's reach. The minute job now
-- calls integrations.run_sweep(), which sweeps and notes the time in the same transaction.
BEGIN;
SET LOCAL ROLE insurance_owner;

CREATE TABLE insurance.job_runs (
  job         text PRIMARY KEY,
  last_run_at timestamptz NOT NULL,
  last_result jsonb
);
COMMENT ON TABLE insurance.job_runs IS 'Last run of each scheduled job (the retry sweep), for monitoring';
ALTER TABLE insurance.job_runs ENABLE ROW LEVEL SECURITY;

-- run_sweep: integrations.sweep(), and its time and result in insurance.job_runs.
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
REVOKE ALL ON FUNCTION integrations.run_sweep() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION integrations.run_sweep() TO insurance_service, insurance_app;

RESET ROLE;
-- Point the minute job at run_sweep (cron.schedule_in_database with the same name updates
-- it), where retry_sweep_job registered one; a NOTICE says what happened.
DO $$
DECLARE
  _cron_db text := current_setting('cron.database_name', true);
  _job text := 'insurance-retry-sweep-' || current_database();
  _conn text;
BEGIN
  IF _cron_db IS NULL THEN
    RAISE NOTICE 'sweep job unchanged: pg_cron is not loaded in this cluster';
    RETURN;
  END IF;
  _conn := format('host=%s port=%s dbname=%s user=%s',
                  split_part(current_setting('unix_socket_directories'), ',', 1),
                  current_setting('port'), _cron_db, current_user);
  PERFORM 1 FROM public.dblink(_conn, format(
    'SELECT cron.schedule_in_database(%L, %L, %L, %L) FROM cron.job WHERE jobname = %L',
    _job, '* * * * *', 'SELECT integrations.run_sweep()', current_database(), _job)) AS t(j bigint);
  RAISE NOTICE 'sweep job % now runs integrations.run_sweep() (where it was scheduled)', _job;
EXCEPTION WHEN OTHERS THEN
  RAISE NOTICE '%', format('sweep job not updated: %s (in the cron database: '
                           'SELECT cron.schedule_in_database(%L, %L, %L, %L))',
                           SQLERRM, _job, '* * * * *', 'SELECT integrations.run_sweep()', current_database());
END
$$;

COMMIT;
