-- Deploy insurance:insurance_jobs to pg
-- How this database registers its pg_cron jobs, and when each job last ran.
-- pg_cron runs a job as the job's user: this database's jobs (the minute sweep, the
-- retention purge) run as insurance_cron, a login that is not a superuser and may only
-- EXECUTE the job functions granted to it. schedule_job()/unschedule_job() register a job in
-- the cluster's cron database (cron.database_name) through dblink, and only say so (NOTICE)
-- where pg_cron is absent, so that every migration stays deployable without it.
-- pg_cron keeps its run history in that other database, out of the app's reach: a job notes
-- its last run in insurance.job_runs (the metric insurance_retry_sweep_last_run_timestamp_seconds).
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
CREATE EXTENSION IF NOT EXISTS dblink;
SET LOCAL ROLE insurance_owner;

-- _cron_connection(): the dblink connection string of the cron database as the current user,
-- or NULL when pg_cron is not loaded or not installed there.
CREATE FUNCTION insurance._cron_connection() RETURNS text
LANGUAGE plpgsql SET search_path = '' AS $$
DECLARE
  _cron_db text := pg_catalog.current_setting('cron.database_name', true);
  _conn text;
BEGIN
  IF _cron_db IS NULL THEN
    RETURN NULL;
  END IF;
  _conn := pg_catalog.format('host=%s port=%s dbname=%s user=%s',
             pg_catalog.split_part(pg_catalog.current_setting('unix_socket_directories'), ',', 1),
             pg_catalog.current_setting('port'), _cron_db, current_user);
  IF NOT EXISTS (SELECT FROM public.dblink(_conn, 'SELECT 1 FROM pg_extension WHERE extname = ''pg_cron''')
                              AS t(x int)) THEN
    RETURN NULL;
  END IF;
  RETURN _conn;
END
$$;

-- schedule_job(job, schedule, command[, database]): (re)registers the job for this database (or
-- _database: the cron database's own jobs), run as
-- insurance_cron; a NOTICE says what was done, or why not and the statement to run by hand.
CREATE FUNCTION insurance.schedule_job(_job text, _schedule text, _command text, _database text DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql SET search_path = '' AS $$
DECLARE
  _conn text;
  _id bigint;
  _by_hand text := pg_catalog.format('SELECT cron.schedule_in_database(%L, %L, %L, %L, %L)',
                     _job, _schedule, _command, coalesce(_database, pg_catalog.current_database()),
                     'insurance_cron');
BEGIN
  _conn := insurance._cron_connection();
  IF _conn IS NULL THEN
    RAISE NOTICE '%', pg_catalog.format('job %s not scheduled: pg_cron is not installed in this cluster', _job);
    RETURN;
  END IF;
  -- A job of the same name under another user (the superuser, before) would run as well.
  PERFORM FROM public.dblink(_conn, pg_catalog.format(
    'SELECT count(cron.unschedule(jobid)) FROM cron.job WHERE jobname = %L', _job)) AS t(n bigint);
  SELECT j INTO _id FROM public.dblink(_conn, _by_hand) AS t(j bigint);
  RAISE NOTICE '%', pg_catalog.format('job %s scheduled (%s) as insurance_cron: pg_cron job %s', _job, _schedule, _id);
EXCEPTION WHEN OTHERS THEN
  -- e.g. a migrating role that dblink may not connect as: say so, deploy anyway.
  RAISE NOTICE '%', pg_catalog.format('job %s not scheduled: %s (schedule it in the cron database: %s)',
                                      _job, SQLERRM, _by_hand);
END
$$;

-- unschedule_job(job): removes the job (every user's) from the cron database, if any.
CREATE FUNCTION insurance.unschedule_job(_job text) RETURNS void
LANGUAGE plpgsql SET search_path = '' AS $$
DECLARE
  _conn text := insurance._cron_connection();
BEGIN
  IF _conn IS NOT NULL THEN
    PERFORM FROM public.dblink(_conn, pg_catalog.format(
      'SELECT count(cron.unschedule(jobid)) FROM cron.job WHERE jobname = %L', _job)) AS t(n bigint);
  END IF;
EXCEPTION WHEN OTHERS THEN
  RAISE NOTICE '%', pg_catalog.format('job %s not unscheduled: %s', _job, SQLERRM);
END
$$;
COMMENT ON FUNCTION insurance._cron_connection() IS
  'The dblink connection string of the cron database (cron.database_name) as the current user, or NULL where pg_cron is '
  'not loaded or not installed. Migrations only.';
COMMENT ON FUNCTION insurance.schedule_job(text, text, text, text) IS
  'Registers (again) job _job with _schedule and _command for this database (or database _database), run as '
  'insurance_cron; says in a NOTICE what '
  'it did, or why not and the statement to run by hand; never raises. Migrations only.';
COMMENT ON FUNCTION insurance.unschedule_job(text) IS
  'Removes job _job (every user''s) from the cron database, if any; never raises. Migrations only.';
REVOKE ALL ON FUNCTION insurance._cron_connection() FROM PUBLIC;
REVOKE ALL ON FUNCTION insurance.schedule_job(text, text, text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION insurance.unschedule_job(text) FROM PUBLIC;

CREATE TABLE insurance.job_runs (
  job         text PRIMARY KEY,
  last_run_at timestamptz NOT NULL,
  last_result jsonb
);
COMMENT ON TABLE insurance.job_runs IS 'Last run of each scheduled job (the retry sweep), for monitoring';
ALTER TABLE insurance.job_runs ENABLE ROW LEVEL SECURITY;

COMMIT;
