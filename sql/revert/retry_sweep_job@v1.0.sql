-- Revert insurance:retry_sweep_job from pg
BEGIN;
DO $$
DECLARE
  _cron_db text := current_setting('cron.database_name', true);
  _conn text;
BEGIN
  IF _cron_db IS NULL THEN
    RETURN;
  END IF;
  _conn := format('host=%s port=%s dbname=%s user=%s',
                  split_part(current_setting('unix_socket_directories'), ',', 1),
                  current_setting('port'), _cron_db, current_user);
  IF EXISTS (SELECT FROM public.dblink(_conn, 'SELECT 1 FROM pg_extension WHERE extname = ''pg_cron''')
                           AS t(x int)) THEN
    PERFORM FROM public.dblink(_conn, format('SELECT count(cron.unschedule(jobid)) FROM cron.job WHERE jobname = %L',
                                             'insurance-retry-sweep-' || current_database())) AS t(n bigint);
    RAISE NOTICE 'retry sweep unscheduled';
  END IF;
EXCEPTION WHEN OTHERS THEN
  RAISE NOTICE 'retry sweep not unscheduled: %', SQLERRM;
END
$$;
DROP FUNCTION integrations.sweep();
DROP EXTENSION IF EXISTS dblink;
COMMIT;
