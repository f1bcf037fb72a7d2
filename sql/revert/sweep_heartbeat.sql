-- Revert insurance:sweep_heartbeat from pg
BEGIN;
DO $$
DECLARE
  _cron_db text := current_setting('cron.database_name', true);
  _job text := 'insurance-retry-sweep-' || current_database();
BEGIN
  IF _cron_db IS NOT NULL THEN
    PERFORM 1 FROM public.dblink(format('host=%s port=%s dbname=%s user=%s',
                                 split_part(current_setting('unix_socket_directories'), ',', 1),
                                 current_setting('port'), _cron_db, current_user), format(
      'SELECT cron.schedule_in_database(%L, %L, %L, %L) FROM cron.job WHERE jobname = %L',
      _job, '* * * * *', 'SELECT integrations.sweep()', current_database(), _job)) AS t(j bigint);
  END IF;
EXCEPTION WHEN OTHERS THEN
  RAISE NOTICE 'sweep job not reset to integrations.sweep(): %', SQLERRM;
END
$$;
DROP FUNCTION integrations.run_sweep();
DROP TABLE insurance.job_runs;
COMMIT;
