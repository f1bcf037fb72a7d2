-- OTP issue and verification (postsales_login): the hash stored, cooldown, hourly cap,
-- right, wrong, expired, reused and exhausted codes. Hashes here are plain digests: the
-- functions only compare what the app sends.
BEGIN;
\ir helpers/common.psql
SELECT plan(24);

CREATE FUNCTION pg_temp.h(code text) RETURNS bytea LANGUAGE sql AS $$ SELECT public.digest(code, 'sha256') $$;

INSERT INTO insurance.packages (uid, name) VALUES ('pgtap-otp', 'OTP package');
INSERT INTO insurance.package_variants (package_id, code, name)
SELECT id, 'travel', 'Travel' FROM insurance.packages WHERE uid = 'pgtap-otp';
INSERT INTO insurance.risk_items (package_id, policy_uid, variant, status)
SELECT id, p, 'travel', s FROM insurance.packages,
       (VALUES ('otp-active', 'active'), ('otp-cancelled', 'cancelled')) AS v(p, s)
 WHERE uid = 'pgtap-otp';
INSERT INTO insurance.beneficiaries (risk_item_id, name, email, is_holder, share)
SELECT id, 'Holder', CASE policy_uid WHEN 'otp-active' THEN 'otp.holder@example.com'
                                     ELSE 'otp.cancelled@example.com' END, true, 100
  FROM insurance.risk_items WHERE policy_uid IN ('otp-active', 'otp-cancelled');

-- ---------------------------------------------------------------- issue
SELECT is(postsales.risk_item_ids_by_holder_email('OTP.Holder@example.com'),
          (SELECT ARRAY[id] FROM insurance.risk_items WHERE policy_uid = 'otp-active'),
          'ids by holder e-mail: the active item, whatever the case of the e-mail');
SELECT is(postsales.risk_item_ids_by_holder_email('otp.cancelled@example.com'), '{}'::bigint[],
          'a holder of a cancelled item only has no active items');

SELECT pg_temp.act_as('insurance_anon');
SELECT is(postsales.request_otp('OTP.Holder@example.com', pg_temp.h('111111'), 600, NULL, 0), '{"send": true}',
          'a holder e-mail: the code is to be mailed');
SELECT is(postsales.request_otp('nobody@example.com', pg_temp.h('222222'), 600, NULL, 0), '{"send": false}',
          'an unknown e-mail: same success, no mail');
SELECT is(postsales.request_otp('otp.cancelled@example.com', pg_temp.h('222222'), 600, NULL, 0), '{"send": false}',
          'a holder without active items gets no mail');
SELECT throws_ok('SELECT * FROM insurance.postsales_otp', '42501', NULL, 'no role may read OTP rows');
SELECT is(postsales.request_otp('otp.holder@example.com', pg_temp.h('333333'), 600, NULL, 0) ->> 'error', 'OTP_COOLDOWN',
          'a second code within 60 s is refused');
SELECT ok((postsales.request_otp('otp.holder@example.com', pg_temp.h('333333'), 600, NULL, 0) ->> 'retry_after')::int
          BETWEEN 1 AND 60, 'the cooldown says when to retry');
SELECT throws_ok($$SELECT postsales.request_otp('otp.holder@example.com', 'short'::bytea, 600, NULL, 0)$$, 'PT400',
                 'malformed OTP request', 'a hash that is not 32 bytes is refused');
SELECT pg_temp.as_operator();

SELECT results_eq($$SELECT code_hash, expires_at - created_at FROM insurance.postsales_otp
                     WHERE email = 'otp.holder@example.com'$$,
                  $$VALUES (pg_temp.h('111111'), interval '600 seconds')$$,
                  'one row: the hash the app sent, valid for the given TTL');
SELECT isnt((SELECT code_hash FROM insurance.postsales_otp WHERE email = 'nobody@example.com'), pg_temp.h('222222'),
            'an unknown e-mail stores an unguessable hash instead');

-- Hourly cap: four older codes in the last hour plus one now are five.
INSERT INTO insurance.postsales_otp (email, code_hash, created_at, expires_at)
SELECT 'otp.cap@example.com', pg_temp.h('000000'), now() - m * interval '1 minute', now() + interval '1 minute'
  FROM generate_series(10, 40, 10) AS m;
INSERT INTO insurance.postsales_otp (email, code_hash, created_at, expires_at)
VALUES ('otp.cap@example.com', pg_temp.h('000000'), now() - interval '2 hours', now() - interval '1 hour');
SELECT pg_temp.act_as('insurance_anon');
SELECT is(postsales.request_otp('otp.cap@example.com', pg_temp.h('444444'), 600, NULL, 0), '{"send": false}',
          'the fifth code of the hour is issued');
SELECT pg_temp.as_operator();
SELECT pg_temp.age_rows('insurance.postsales_otp', '5 minutes',
                         $$email = 'otp.cap@example.com' AND created_at = now()$$);
SELECT pg_temp.act_as('insurance_anon');
SELECT is(postsales.request_otp('otp.cap@example.com', pg_temp.h('555555'), 600, NULL, 0) ->> 'error', 'OTP_RATE_LIMITED',
          'a sixth code within the hour is refused');
SELECT is((postsales.request_otp('otp.cap@example.com', pg_temp.h('555555'), 600, NULL, 0) ->> 'retry_after')::int,
          20 * 60, 'retry when the oldest code of the hour leaves the window');
SELECT pg_temp.as_operator();
SELECT is((SELECT count(*)::int FROM insurance.postsales_otp WHERE email = 'otp.cap@example.com'), 5,
          'rows older than an hour are pruned; refused requests store nothing');

-- ---------------------------------------------------------------- verify
SELECT pg_temp.act_as('insurance_anon');
SELECT is(postsales.verify_otp('otp.holder@example.com', pg_temp.h('999999'), 3, NULL, 0), '{"error": "OTP_INVALID"}',
          'a wrong code is refused');
SELECT is(postsales.verify_otp('OTP.holder@example.com', pg_temp.h('111111'), 3, NULL, 0),
          '{"ok": true, "email": "otp.holder@example.com"}', 'the right code verifies');
SELECT is(postsales.verify_otp('otp.holder@example.com', pg_temp.h('111111'), 3, NULL, 0), '{"error": "OTP_INVALID"}',
          'a used code does not verify again');
SELECT is(postsales.verify_otp('never@example.com', pg_temp.h('111111'), 3, NULL, 0), '{"error": "OTP_INVALID"}',
          'no code for the e-mail');
SELECT pg_temp.as_operator();
SELECT results_eq($$SELECT attempts, consumed_at IS NOT NULL FROM insurance.postsales_otp
                     WHERE email = 'otp.holder@example.com'$$, $$VALUES (1, true)$$,
                  'one failed attempt counted; the code is consumed');

INSERT INTO insurance.postsales_otp (email, code_hash, created_at, expires_at) VALUES
  ('otp.expired@example.com', pg_temp.h('123456'), now() - interval '20 minutes', now() - interval '10 minutes'),
  ('otp.exhausted@example.com', pg_temp.h('123456'), now(), now() + interval '10 minutes');
SELECT pg_temp.act_as('insurance_anon');
SELECT is(postsales.verify_otp('otp.expired@example.com', pg_temp.h('123456'), 3, NULL, 0), '{"error": "OTP_EXPIRED"}',
          'an expired code does not verify');
SELECT is(ARRAY(SELECT postsales.verify_otp('otp.exhausted@example.com', pg_temp.h('000000'), 3, NULL, 0) ->> 'error'
                  FROM generate_series(1, 4)),
          ARRAY['OTP_INVALID', 'OTP_INVALID', 'OTP_INVALID', 'OTP_ATTEMPTS_EXHAUSTED'],
          'three wrong guesses are evaluated, the fourth is refused');
SELECT is(postsales.verify_otp('otp.exhausted@example.com', pg_temp.h('123456'), 3, NULL, 0) ->> 'error',
          'OTP_ATTEMPTS_EXHAUSTED', 'the right code no longer verifies once attempts are exhausted');
SELECT pg_temp.as_operator();
SELECT is((SELECT attempts FROM insurance.postsales_otp WHERE email = 'otp.exhausted@example.com'), 5,
          'every failed verification is counted, evaluated or not');

SELECT * FROM finish();
ROLLBACK;
