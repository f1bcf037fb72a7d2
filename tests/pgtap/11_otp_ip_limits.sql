-- OTP limits per client IP: every request and every failed verification counts against the
-- IP's hour; past the limit nothing is issued or compared; a right code gives its slot back.
BEGIN;
\ir helpers/common.psql
SELECT plan(9);

CREATE FUNCTION pg_temp.h(code text) RETURNS bytea LANGUAGE sql AS $$ SELECT public.digest(code, 'sha256') $$;

SELECT pg_temp.act_as('insurance_anon');
SELECT is(ARRAY(SELECT postsales.request_otp(format('ip%s@example.com', n), pg_temp.h('111111'), 600, '198.51.100.7', 3)
                       ->> 'error' FROM generate_series(1, 4) n),
          ARRAY[NULL, NULL, NULL, 'OTP_IP_RATE_LIMITED'],
          'three requests an hour from one IP, for three e-mails: the fourth is refused');
SELECT ok((postsales.request_otp('ip9@example.com', pg_temp.h('111111'), 600, '198.51.100.7', 3) ->> 'retry_after')::int
            BETWEEN 1 AND 3600, 'the refusal says when the hour ends');
SELECT is(postsales.request_otp('ip9@example.com', pg_temp.h('111111'), 600, '198.51.100.8', 3), '{"send": false}',
          'another IP is not limited');
SELECT pg_temp.as_operator();
SELECT is((SELECT count(*)::int FROM insurance.postsales_otp WHERE email LIKE 'ip_@example.com' AND email <> 'ip9@example.com'),
          3, 'a refused request issues no code');

-- Failed verifications: reserved before the compare.
INSERT INTO insurance.postsales_otp (email, code_hash, expires_at)
VALUES ('ipv@example.com', pg_temp.h('424242'), now() + interval '10 minutes');
SELECT pg_temp.act_as('insurance_anon');
SELECT is(ARRAY(SELECT postsales.verify_otp('other' || n || '@example.com', pg_temp.h('000000'), 5, '203.0.113.5', 2)
                       ->> 'error' FROM generate_series(1, 2) n),
          ARRAY['OTP_INVALID', 'OTP_INVALID'], 'two failed verifications are evaluated');
SELECT is(postsales.verify_otp('ipv@example.com', pg_temp.h('424242'), 5, '203.0.113.5', 2) ->> 'error',
          'OTP_IP_RATE_LIMITED', 'the third is refused before the compare, even with the right code');
SELECT pg_temp.as_operator();
SELECT is((SELECT consumed_at FROM insurance.postsales_otp WHERE email = 'ipv@example.com'), NULL,
          'and the code was not used');
UPDATE insurance.client_ip_limits SET hits = 1 WHERE ip = '203.0.113.5';
SELECT pg_temp.act_as('insurance_anon');
SELECT is(postsales.verify_otp('ipv@example.com', pg_temp.h('424242'), 5, '203.0.113.5', 2) ->> 'ok', 'true',
          'a right code within the limit logs in');
SELECT pg_temp.as_operator();
SELECT is((SELECT hits FROM insurance.client_ip_limits WHERE kind = 'otp_verify_failure' AND ip = '203.0.113.5'), 1,
          'and gives its slot back: only failures count');

SELECT * FROM finish();
ROLLBACK;
