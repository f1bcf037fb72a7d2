-- Device tokens (docs/security.md "Devices"): a device proof exempts a login or a code from the
-- account's ceiling, never from the (account, address) limits; an operator's proof holds while its
-- device generation is the user's, which disable, a new password and ended sessions bump.
BEGIN;
\ir helpers/common.psql
SELECT plan(13);

CREATE FUNCTION pg_temp.h(code text) RETURNS bytea LANGUAGE sql AS $$ SELECT public.digest(code, 'sha256') $$;
INSERT INTO insurance.dashboard_users (email, password_hash)
VALUES ('device@pgtap.invalid', '$argon2id$v=19$m=8,t=1,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA');
CREATE TEMP TABLE _user AS SELECT id, device_generation FROM insurance.dashboard_users WHERE email = 'device@pgtap.invalid';
GRANT SELECT ON _user TO PUBLIC;
-- The account's ceiling is spent: 100 failures from many addresses.
INSERT INTO insurance.dashboard_login_failures (key, failures, window_ends)
VALUES ('email:device@pgtap.invalid', 100, now() + interval '10 minutes');

SELECT pg_temp.act_as('insurance_anon');
SELECT is(dashboard.login_user('device@pgtap.invalid', '192.0.2.7') ->> 'error', 'RATE_LIMITED',
          'without a device proof the ceiling refuses');
SELECT is(dashboard.login_user('device@pgtap.invalid', '192.0.2.7', (SELECT id FROM _user), (SELECT device_generation FROM _user)) ->> 'error',
          NULL, 'with the user''s current device generation the attempt is exempt');
SELECT is(dashboard.login_user('device@pgtap.invalid', '192.0.2.7', (SELECT id FROM _user), (SELECT device_generation + 1 FROM _user)) ->> 'error',
          'RATE_LIMITED', 'another generation exempts nothing');
SELECT is(dashboard.login_user('device@pgtap.invalid', '192.0.2.7', (SELECT id + 1 FROM _user), (SELECT device_generation FROM _user)) ->> 'error',
          'RATE_LIMITED', 'another user''s proof exempts nothing');
SELECT pg_temp.as_operator();
SELECT is((SELECT failures FROM insurance.dashboard_login_failures WHERE key = 'email:device@pgtap.invalid'), 100,
          'an exempt attempt does not count toward the ceiling');
-- The (e-mail, address) limit holds, proof or not.
INSERT INTO insurance.dashboard_login_failures (key, failures, window_ends)
VALUES ('email+ip:device@pgtap.invalid|192.0.2.8', 5, now() + interval '10 minutes');
SELECT pg_temp.act_as('insurance_anon');
SELECT is(dashboard.login_user('device@pgtap.invalid', '192.0.2.8', (SELECT id FROM _user), (SELECT device_generation FROM _user)) ->> 'error',
          'RATE_LIMITED', 'a device proof never lifts the (e-mail, address) limit');
SELECT pg_temp.as_operator();

-- Disable, a new password and ended sessions bump the generation (admin._end_sessions).
SELECT admin.end_dashboard_sessions('cli:pgtap', 'device@pgtap.invalid', NULL);
SELECT is((SELECT device_generation FROM insurance.dashboard_users WHERE email = 'device@pgtap.invalid'),
          (SELECT device_generation + 1 FROM _user), 'ending the sessions bumps the device generation');
SELECT admin.set_dashboard_password('cli:pgtap', 'device@pgtap.invalid', '$argon2id$v=19$m=8,t=1,p=1$bmV3c2FsdA$bmV3aGFzaA');
SELECT admin.disable_dashboard_user('cli:pgtap', 'device@pgtap.invalid');
SELECT admin.enable_dashboard_user('cli:pgtap', 'device@pgtap.invalid');
SELECT is((SELECT device_generation FROM insurance.dashboard_users WHERE email = 'device@pgtap.invalid'),
          (SELECT device_generation + 3 FROM _user), 'a new password and disabling bump it too');
SELECT pg_temp.act_as('insurance_anon');
SELECT is(dashboard.login_user('device@pgtap.invalid', '192.0.2.7', (SELECT id FROM _user), (SELECT device_generation FROM _user)) ->> 'error',
          'RATE_LIMITED', 'so the old proof exempts nothing');
SELECT pg_temp.as_operator();

-- Holders: the e-mail's ceilings of codes and of failed verifications.
INSERT INTO insurance.postsales_otp (email, code_hash, created_at, expires_at, ip, attempts)
SELECT 'device@example.com', pg_temp.h('000000'), now() - interval '10 minutes', now() + interval '1 minute',
       format('192.0.2.%s', n)::inet, 5
  FROM generate_series(1, 20) n;
SELECT pg_temp.act_as('insurance_anon');
SELECT is(postsales.request_otp('device@example.com', pg_temp.h('111111'), 600, '198.18.1.1', 0) ->> 'error',
          'OTP_RATE_LIMITED', 'past 20 codes in the hour, a request without a device is refused');
SELECT is(postsales.request_otp('device@example.com', pg_temp.h('111111'), 600, '198.18.1.1', 0, true) ->> 'error',
          NULL, 'with a device it gets its code');
SELECT pg_temp.as_operator();
INSERT INTO insurance.postsales_otp (email, code_hash, expires_at, ip)
VALUES ('device@example.com', pg_temp.h('222222'), now() + interval '10 minutes', '198.18.1.2');
SELECT pg_temp.act_as('insurance_anon');
SELECT is(postsales.verify_otp('device@example.com', pg_temp.h('222222'), 5, '198.18.1.2', 0) ->> 'error',
          'OTP_ATTEMPTS_EXHAUSTED', 'past 50 failed verifications in the hour, the right code without a device is refused');
SELECT is(postsales.verify_otp('device@example.com', pg_temp.h('222222'), 5, '198.18.1.2', 0, true) ->> 'ok',
          'true', 'with a device it is verified');
SELECT pg_temp.as_operator();

SELECT * FROM finish();
ROLLBACK;
