-- Deploy insurance:insurance_retention_job to pg
-- Nothing grows forever: one pg_cron job (hourly, as insurance_cron) purges what has
-- expired. How long delivered outbox rows are kept is the database setting
-- insurance.outbox_retention (OUTBOX_RETENTION, applied by `python -m app migrate`; 7 days).
-- pg_cron's own history (cron.job_run_details) lives in the cron database, which this
-- database's hourly job cannot reach (dblink needs a password for a role that is not a
-- superuser): a second job, registered by set_cron_history_retention() in the cron database,
-- prunes the history of insurance_cron's jobs (CRON_HISTORY_RETENTION, applied by migrate;
-- 7 days). The superuser's other jobs' history is the DBA's (its RLS hides it from that job).
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

-- purge_expired(): one pass; returns how many rows of each kind went.
--   otp          codes expired and older than the hour the per-e-mail cap looks at
--   sessions     dashboard sessions that expired or were revoked
--   loginWindows failed-login windows that have ended, and the ceiling trips reported for them
--   rateLimits   gateway counters of past minutes, client-IP counters of past hours
--   outbox       outbox rows delivered longer than insurance.outbox_retention ago
CREATE FUNCTION insurance.purge_expired() RETURNS jsonb
LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
DECLARE
  _now       timestamptz := pg_catalog.now();
  _retention interval := coalesce(nullif(pg_catalog.current_setting('insurance.outbox_retention', true), ''),
                                  '7 days')::interval;
  _otp       integer;
  _sessions  integer;
  _windows   integer;
  _minutes   integer;
  _hours     integer;
  _outbox    integer;
BEGIN
  DELETE FROM insurance.postsales_otp WHERE created_at < _now - interval '1 hour' AND expires_at < _now;
  GET DIAGNOSTICS _otp = ROW_COUNT;
  DELETE FROM insurance.dashboard_sessions WHERE expires_at < _now OR revoked_at IS NOT NULL;
  GET DIAGNOSTICS _sessions = ROW_COUNT;
  DELETE FROM insurance.dashboard_login_failures WHERE window_ends < _now;
  GET DIAGNOSTICS _windows = ROW_COUNT;
  DELETE FROM insurance.account_ceiling_trips WHERE window_ends < _now;  -- the counts and audit rows stay
  GET DIAGNOSTICS _hours = ROW_COUNT;
  _windows := _windows + _hours;
  DELETE FROM insurance.rate_limits WHERE window_start < pg_catalog.date_trunc('minute', _now);
  GET DIAGNOSTICS _minutes = ROW_COUNT;
  DELETE FROM insurance.client_ip_limits WHERE window_start < pg_catalog.date_trunc('hour', _now);
  GET DIAGNOSTICS _hours = ROW_COUNT;
  DELETE FROM outbox.http_requests WHERE delivered_at < _now - _retention;
  GET DIAGNOSTICS _outbox = ROW_COUNT;
  RETURN pg_catalog.jsonb_build_object('otp', _otp, 'sessions', _sessions, 'loginWindows', _windows,
                                       'rateLimits', _minutes + _hours, 'outbox', _outbox);
END
$$;
COMMENT ON FUNCTION insurance.purge_expired() IS
  'One retention pass: deletes expired OTP rows, ended sessions, old login-failure and rate-limit '
  'windows and outbox rows delivered longer than OUTBOX_RETENTION ago; returns the counts. '
  'insurance_cron (the hourly job).';
REVOKE ALL ON FUNCTION insurance.purge_expired() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION insurance.purge_expired() TO insurance_cron;

-- set_outbox_retention(retention): how long delivered outbox rows are kept (a database
-- setting read by each run of the job). Operators only: `migrate` calls it with OUTBOX_RETENTION.
CREATE FUNCTION insurance.set_outbox_retention(_retention interval) RETURNS void
LANGUAGE plpgsql SET search_path = '' AS $$
BEGIN
  IF _retention IS NULL OR _retention < interval '1 minute' THEN
    RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = 'the outbox retention must be at least a minute';
  END IF;
  EXECUTE pg_catalog.format('ALTER DATABASE %I SET insurance.outbox_retention = %L',
                            pg_catalog.current_database(), _retention::text);
END
$$;
COMMENT ON FUNCTION insurance.set_outbox_retention(interval) IS
  'Sets how long delivered outbox rows are kept (a database setting read by each purge). Operators '
  '(migrate).';
REVOKE ALL ON FUNCTION insurance.set_outbox_retention(interval) FROM PUBLIC;

-- set_cron_history_retention(keep): (re)registers the job 'insurance-cron-history' in the cron
-- database, run as insurance_cron: every hour it deletes the cron.job_run_details rows of
-- insurance_cron's jobs that ended longer than _keep ago (pg_cron's RLS shows that role only its
-- own rows). One job per cluster: every database of this project registers the same name, the
-- last retention set wins. Where pg_cron is absent, a NOTICE says so and nothing changes.
CREATE FUNCTION insurance.set_cron_history_retention(_keep interval) RETURNS void
LANGUAGE plpgsql SET search_path = '' AS $$
DECLARE
  _conn text;
  _grant text := 'GRANT USAGE ON SCHEMA cron TO insurance_cron';
BEGIN
  IF _keep IS NULL OR _keep < interval '1 hour' THEN
    RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = 'the cron history retention must be at least an hour';
  END IF;
  _conn := insurance._cron_connection();
  IF _conn IS NULL THEN
    RAISE NOTICE 'job insurance-cron-history not scheduled: pg_cron is not installed in this cluster';
    RETURN;
  END IF;
  BEGIN
    PERFORM public.dblink_exec(_conn, _grant);
  EXCEPTION WHEN OTHERS THEN
    RAISE NOTICE '%', pg_catalog.format('job insurance-cron-history not scheduled: %s (in the cron database, run: %s; '
                                        'then SELECT insurance.set_cron_history_retention(%L))', SQLERRM, _grant, _keep);
    RETURN;
  END;
  PERFORM insurance.schedule_job('insurance-cron-history', '41 * * * *',
            pg_catalog.format('DELETE FROM cron.job_run_details WHERE end_time < now() - %L::interval', _keep::text),
            pg_catalog.current_setting('cron.database_name'));
END
$$;
COMMENT ON FUNCTION insurance.set_cron_history_retention(interval) IS
  'Registers the hourly job that deletes pg_cron''s history (cron.job_run_details) of insurance_cron''s jobs '
  'ended longer than _keep ago (at least an hour), in the cron database; a NOTICE where pg_cron is absent. '
  'Operators (migrate, CRON_HISTORY_RETENTION).';
REVOKE ALL ON FUNCTION insurance.set_cron_history_retention(interval) FROM PUBLIC;

RESET ROLE;
GRANT USAGE ON SCHEMA insurance TO insurance_cron;
SELECT insurance.set_cron_history_retention('7 days');
SELECT insurance.schedule_job('insurance-retention-' || current_database(), '17 * * * *',
                              'SELECT insurance.purge_expired()');

COMMIT;
