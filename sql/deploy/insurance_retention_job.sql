-- Deploy insurance:insurance_retention_job to pg
-- Nothing grows forever: one pg_cron job (hourly, as insurance_cron) purges what has
-- expired. How long delivered outbox rows are kept is the database setting
-- insurance.outbox_retention (OUTBOX_RETENTION, applied by `python -m app migrate`; 7 days).
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

RESET ROLE;
GRANT USAGE ON SCHEMA insurance TO insurance_cron;
SELECT insurance.schedule_job('insurance-retention-' || current_database(), '17 * * * *',
                              'SELECT insurance.purge_expired()');

COMMIT;
