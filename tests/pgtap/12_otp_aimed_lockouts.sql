-- OTP limits that one address cannot aim at a holder elsewhere (postsales_login,
-- account_ceilings): a code belongs to the (e-mail, address) that asked for it; cooldown, hourly
-- cap and attempts are that pair's; the e-mail's ceilings (20 codes, 50 failed verifications an
-- hour from every address together) stop guessing spread over many addresses, audited once.
BEGIN;
\ir helpers/common.psql
SELECT plan(14);

CREATE FUNCTION pg_temp.h(code text) RETURNS bytea LANGUAGE sql AS $$ SELECT public.digest(code, 'sha256') $$;
CREATE TEMP TABLE _trips AS
SELECT k AS kind, coalesce((SELECT trips FROM insurance.account_ceiling_counts c WHERE c.kind = k), 0) AS before
  FROM unnest(ARRAY['otp_request', 'otp_verify']) k;

SELECT pg_temp.act_as('insurance_anon');
-- ---------------------------------------------------------------- requests
SELECT is(postsales.request_otp('aim@example.com', pg_temp.h('111111'), 600, '198.51.100.1', 0) ->> 'error', NULL,
          'an address asks for a code');
SELECT is(postsales.request_otp('aim@example.com', pg_temp.h('111112'), 600, '198.51.100.1', 0) ->> 'error', 'OTP_COOLDOWN',
          'the same address again within the minute: its cooldown');
SELECT is(postsales.request_otp('aim@example.com', pg_temp.h('222222'), 600, '203.0.113.1', 0) ->> 'error', NULL,
          'another address for the same e-mail is not held by that cooldown');
SELECT pg_temp.as_operator();
-- Four more codes of the first address in the hour: its cap of five is reached, not the e-mail's.
INSERT INTO insurance.postsales_otp (email, code_hash, created_at, expires_at, ip)
SELECT 'aim@example.com', pg_temp.h('000000'), now() - m * interval '5 minutes', now() + interval '5 minutes', '198.51.100.1'
  FROM generate_series(1, 4) m;
SELECT pg_temp.age_rows('insurance.postsales_otp', '2 minutes', $$email = 'aim@example.com' AND created_at = now()$$);  -- past every cooldown
SELECT pg_temp.act_as('insurance_anon');
SELECT is(postsales.request_otp('aim@example.com', pg_temp.h('333333'), 600, '198.51.100.1', 0) ->> 'error', 'OTP_RATE_LIMITED',
          'the address that asked five times in the hour is refused');
SELECT is(postsales.request_otp('aim@example.com', pg_temp.h('444444'), 600, '203.0.113.2', 0) ->> 'error', NULL,
          'a third address still gets a code');
SELECT pg_temp.as_operator();

-- The ceiling: 20 codes an hour for the e-mail, whichever addresses asked.
INSERT INTO insurance.postsales_otp (email, code_hash, created_at, expires_at, ip)
SELECT 'ceiling@example.com', pg_temp.h('000000'), now() - interval '10 minutes', now() + interval '1 minute',
       format('192.0.2.%s', n)::inet
  FROM generate_series(1, 20) n;
SELECT pg_temp.act_as('insurance_anon');
SELECT is(ARRAY(SELECT postsales.request_otp('ceiling@example.com', pg_temp.h('555555'), 600,
                                            format('198.18.0.%s', n)::inet, 0) ->> 'error' FROM generate_series(1, 2) n),
          ARRAY['OTP_RATE_LIMITED', 'OTP_RATE_LIMITED'], 'past 20 codes in the hour every address is refused');
SELECT pg_temp.as_operator();
SELECT is((SELECT count(*)::int FROM insurance.audit_log WHERE action = 'limits.account_ceiling'
            AND targets = '["ceiling@example.com"]' AND details ->> 'kind' = 'otp_request'), 1,
          'the request ceiling''s trip is audited once');
SELECT is((SELECT c.trips - t.before FROM insurance.account_ceiling_counts c JOIN _trips t USING (kind)
            WHERE kind = 'otp_request'), 1::bigint, 'and counted once');

-- ---------------------------------------------------------------- verifications
INSERT INTO insurance.postsales_otp (email, code_hash, expires_at, ip) VALUES
  ('verify@example.com', pg_temp.h('123456'), now() + interval '10 minutes', '203.0.113.50'),  -- the holder's
  ('verify@example.com', pg_temp.h('654321'), now() + interval '10 minutes', '198.51.100.66'); -- the guesser's
SELECT pg_temp.act_as('insurance_anon');
SELECT is(ARRAY(SELECT postsales.verify_otp('verify@example.com', pg_temp.h('123456'), 3, '198.51.100.66', 0) ->> 'error'
                  FROM generate_series(1, 4)),
          ARRAY['OTP_INVALID', 'OTP_INVALID', 'OTP_INVALID', 'OTP_ATTEMPTS_EXHAUSTED'],
          'another address''s guesses, even the holder''s code, touch only its own code');
SELECT is(postsales.verify_otp('verify@example.com', pg_temp.h('123456'), 3, '198.51.100.99', 0) ->> 'error', 'OTP_INVALID',
          'an address that asked for nothing has no code to guess');
SELECT is(postsales.verify_otp('verify@example.com', pg_temp.h('123456'), 3, '203.0.113.50', 0) ->> 'ok', 'true',
          'the holder''s code still logs in from the holder''s address');
SELECT pg_temp.as_operator();

-- The ceiling: 50 failed verifications of the e-mail's codes in the hour, over every address.
INSERT INTO insurance.postsales_otp (email, code_hash, created_at, expires_at, attempts, ip)
SELECT 'guessed@example.com', pg_temp.h('000000'), now() - interval '20 minutes', now() + interval '5 minutes', 5,
       format('192.0.2.%s', n)::inet
  FROM generate_series(1, 10) n;
INSERT INTO insurance.postsales_otp (email, code_hash, expires_at, ip)
VALUES ('guessed@example.com', pg_temp.h('777777'), now() + interval '10 minutes', '203.0.113.77');
SELECT pg_temp.act_as('insurance_anon');
SELECT is(postsales.verify_otp('guessed@example.com', pg_temp.h('777777'), 5, '203.0.113.77', 0) ->> 'error',
          'OTP_ATTEMPTS_EXHAUSTED', 'past 50 failures in the hour nothing is compared, from any address');
SELECT is(postsales.verify_otp('guessed@example.com', pg_temp.h('777777'), 5, '203.0.113.78', 0) ->> 'error',
          'OTP_ATTEMPTS_EXHAUSTED', 'nor from another');
SELECT pg_temp.as_operator();
SELECT is((SELECT count(*)::int FROM insurance.audit_log WHERE action = 'limits.account_ceiling'
            AND targets = '["guessed@example.com"]' AND details ->> 'kind' = 'otp_verify'
            AND (details ->> 'limit')::int = 50), 1,
          'the verification ceiling''s trip is audited once');

SELECT * FROM finish();
ROLLBACK;
