-- The retention job: each purge takes what has expired and leaves what is still live; the
-- job is registered hourly, as insurance_cron.
BEGIN;
SELECT plan(17);

-- OTP rows: kept while they are live or still counted by the per-e-mail hourly cap.
INSERT INTO insurance.postsales_otp (email, code_hash, created_at, expires_at) VALUES
  ('old@retention.invalid', '\x00', now() - interval '2 hours', now() - interval '110 minutes'),
  ('cap@retention.invalid', '\x00', now() - interval '30 minutes', now() - interval '20 minutes'),
  ('live@retention.invalid', '\x00', now(), now() + interval '10 minutes');
-- Sessions: expired, revoked, live.
INSERT INTO insurance.dashboard_users (email, password_hash) VALUES ('ret@retention.invalid', '$argon2id$x');
INSERT INTO insurance.dashboard_sessions (token_hash, user_id, created_at, expires_at, revoked_at)
SELECT public.digest(t, 'sha256'), u.id, now() - interval '2 days', e, r
  FROM insurance.dashboard_users u,
       (VALUES ('expired', now() - interval '1 second', NULL::timestamptz),
               ('revoked', now() + interval '1 hour', now() - interval '1 minute'),
               ('live', now() + interval '1 hour', NULL)) AS s(t, e, r)
 WHERE u.email = 'ret@retention.invalid';
-- Login windows: ended and running.
INSERT INTO insurance.dashboard_login_failures (key, failures, window_ends) VALUES
  ('email:ended@retention.invalid', 5, now() - interval '1 second'),
  ('email:running@retention.invalid', 5, now() + interval '1 minute');
-- Rate limits: a past minute and the current one; a past hour and the current one.
INSERT INTO insurance.channels (id, name, api_key_hash) VALUES
  ('ffffffff-0000-4000-8000-000000000065', 'R1', public.digest('ret-1', 'sha256')),
  ('ffffffff-0000-4000-8000-000000000066', 'R2', public.digest('ret-2', 'sha256'));
INSERT INTO insurance.rate_limits (channel_id, window_start, hits) VALUES
  ('ffffffff-0000-4000-8000-000000000065', date_trunc('minute', now()) - interval '1 minute', 3),
  ('ffffffff-0000-4000-8000-000000000066', date_trunc('minute', now()), 3);
INSERT INTO insurance.client_ip_limits (kind, ip, window_start, hits) VALUES
  ('otp_request', '192.0.2.65', date_trunc('hour', now()) - interval '1 hour', 9),
  ('otp_request', '192.0.2.66', date_trunc('hour', now()), 9);
-- Outbox: delivered 8 days ago, delivered 6 days ago, never delivered (however old).
DELETE FROM outbox.http_requests;
INSERT INTO outbox.http_requests (url, created_at, delivered_at) VALUES
  ('https://x.example.com/old', now() - interval '8 days', now() - interval '8 days'),
  ('https://x.example.com/recent', now() - interval '6 days', now() - interval '6 days'),
  ('https://x.example.com/pending', now() - interval '30 days', NULL);

SELECT is(insurance.purge_expired(),
          '{"otp": 1, "sessions": 2, "loginWindows": 1, "rateLimits": 2, "outbox": 1, "pseudonymized": 0}'::jsonb,
          'one pass purges one row of each expired kind');
SELECT is(ARRAY(SELECT email FROM insurance.postsales_otp WHERE email LIKE '%@retention.invalid' ORDER BY email),
          ARRAY['cap@retention.invalid', 'live@retention.invalid'],
          'OTP: a live code and a code still counted by the hourly cap stay');
SELECT is((SELECT count(*)::int FROM insurance.dashboard_sessions WHERE token_hash = public.digest('live', 'sha256')), 1,
          'sessions: the live one stays');
SELECT is(ARRAY(SELECT key FROM insurance.dashboard_login_failures WHERE key LIKE '%retention.invalid'),
          ARRAY['email:running@retention.invalid'], 'login windows: the running one stays');
SELECT is(ARRAY(SELECT channel_id::text FROM insurance.rate_limits WHERE channel_id::text LIKE 'ffffffff%'),
          ARRAY['ffffffff-0000-4000-8000-000000000066'], 'rate limits: the current minute stays');
SELECT is(ARRAY(SELECT host(ip) FROM insurance.client_ip_limits WHERE ip << '192.0.2.0/24'),
          ARRAY['192.0.2.66'], 'client-IP limits: the current hour stays');
SELECT is(ARRAY(SELECT url FROM outbox.http_requests ORDER BY url),
          ARRAY['https://x.example.com/pending', 'https://x.example.com/recent'],
          'outbox: rows delivered within OUTBOX_RETENTION and rows not delivered stay');

SET LOCAL insurance.outbox_retention = '5 days';
SELECT is(insurance.purge_expired() ->> 'outbox', '1', 'the retention is the insurance.outbox_retention setting');
SELECT throws_ok($$SELECT insurance.set_outbox_retention('1 second')$$, '22023', NULL,
                 'a retention under a minute is refused');

SELECT ok(NOT has_function_privilege('insurance_app', 'insurance.purge_expired()', 'EXECUTE'),
          'the app cannot purge');
SELECT ok(has_function_privilege('insurance_cron', 'insurance.purge_expired()', 'EXECUTE'),
          'the cron role can');
SELECT ok((SELECT NOT rolsuper FROM pg_roles WHERE rolname = 'insurance_cron'), 'and is no superuser');

SELECT is((SELECT x FROM dblink(format('host=%s port=%s dbname=%s user=%s',
                                       split_part(current_setting('unix_socket_directories'), ',', 1),
                                       current_setting('port'), current_setting('cron.database_name'), current_user),
                                format('SELECT schedule || '' '' || command || '' as '' || username FROM cron.job WHERE jobname = %L',
                                       'insurance-retention-' || current_database())) AS j(x text)),
          '17 * * * * SELECT insurance.purge_expired() as insurance_cron',
          'the retention job runs hourly, as insurance_cron');

-- pg_cron's own history: the job of the cron database that prunes insurance_cron's runs.
SELECT throws_ok($$SELECT insurance.set_cron_history_retention('1 minute')$$, '22023', NULL,
                 'a cron history retention under an hour is refused');
SELECT ok(NOT has_function_privilege('insurance_app', 'insurance.set_cron_history_retention(interval)', 'EXECUTE'),
          'the app cannot change it');
SELECT dblink_connect('cron_db', format('host=%s port=%s dbname=%s user=%s',
                                        split_part(current_setting('unix_socket_directories'), ',', 1),
                                        current_setting('port'), current_setting('cron.database_name'), current_user));
SELECT is((SELECT x FROM dblink('cron_db', $$SELECT schedule || ' ' || command || ' as ' || username || ' in ' || database
                                              FROM cron.job WHERE jobname = 'insurance-cron-history'$$) AS j(x text)),
          $$41 * * * * DELETE FROM cron.job_run_details WHERE end_time < now() - '7 days'::interval as insurance_cron in $$
            || current_setting('cron.database_name'),
          'the cron history job runs hourly in the cron database, as insurance_cron, keeping 7 days');
-- What the job does, in a transaction of the cron database that is rolled back: of three runs
-- (insurance_cron's old and recent, the superuser's old), only insurance_cron's old one goes.
SELECT dblink_exec('cron_db', 'BEGIN');
SELECT dblink_exec('cron_db', $$INSERT INTO cron.job_run_details (jobid, runid, database, username, command, status, end_time)
  VALUES (-69, -691, 'pgtap', 'insurance_cron', 'old', 'succeeded', now() - interval '8 days'),
         (-69, -692, 'pgtap', 'insurance_cron', 'recent', 'succeeded', now() - interval '6 days'),
         (-69, -693, 'pgtap', 'postgres', 'not ours', 'succeeded', now() - interval '8 days')$$);
SELECT dblink_exec('cron_db', 'SET LOCAL ROLE insurance_cron');
SELECT dblink_exec('cron_db', (SELECT x FROM dblink('cron_db', $$SELECT command FROM cron.job
                                                               WHERE jobname = 'insurance-cron-history'$$) AS j(x text)));
SELECT dblink_exec('cron_db', 'RESET ROLE');
SELECT is((SELECT x FROM dblink('cron_db', $$SELECT string_agg(command, ', ' ORDER BY runid DESC)
                                              FROM cron.job_run_details WHERE jobid = -69$$) AS j(x text)),
          'recent, not ours', 'the job prunes only insurance_cron''s runs older than the retention');
SELECT dblink_exec('cron_db', 'ROLLBACK');
SELECT dblink_disconnect('cron_db');

SELECT * FROM finish();
ROLLBACK;
