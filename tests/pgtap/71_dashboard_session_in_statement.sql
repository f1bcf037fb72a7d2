-- The dashboard session resolved inside the procedure's own statement (one round trip).
BEGIN;
\ir helpers/common.psql
SELECT plan(6);

INSERT INTO insurance.dashboard_users (email, password_hash)
VALUES ('stmt@pgtap.invalid', '$argon2id$v=19$m=8,t=1,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA');
SELECT dashboard.login_succeeded('stmt@pgtap.invalid', '$argon2id$v=19$m=8,t=1,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA',
                                 sha256('live-token'), 3600, '192.0.2.1', 'pgtap');

SELECT is((SELECT current_setting('request.jwt.claims')::jsonb ->> 'email'
             FROM (SELECT set_config('request.jwt.claims', dashboard.session_claims_or_deny(sha256('live-token')), true)
                   OFFSET 0) AS _auth),
          'stmt@pgtap.invalid', 'a live session sets its claims in the same statement');
SELECT is(dashboard.session_claims_or_deny(sha256('live-token'))::jsonb ->> 'role', 'dashboard',
          'the claims name the dashboard role');
SELECT throws_ok($$SELECT dashboard.session_claims_or_deny(sha256('unknown-token'))$$, 'PT401',
                 'A valid dashboard session is required', 'an unknown session is refused');
-- The first call of every tRPC query: under the switched role, no call to require_role (issue 32).
SET LOCAL track_functions = 'all';
SELECT pg_temp.act_as('insurance_dashboard');
CREATE TEMP TABLE _claims AS SELECT dashboard.session_claims_or_deny(sha256('live-token'))::jsonb AS claims;
SELECT pg_temp.as_operator();
SELECT is(ARRAY(SELECT funcname || ' x' || calls FROM pg_stat_xact_user_functions
                 WHERE schemaname IN ('dashboard', 'insurance') ORDER BY 1),
          ARRAY['session_claims_or_deny x1'], 'as the dashboard role, the session costs one call');
SELECT dashboard.logout(sha256('live-token'));
SELECT throws_ok($$SELECT dashboard.session_claims_or_deny(sha256('live-token'))$$, 'PT401',
                 'A valid dashboard session is required', 'a revoked session is refused');
SELECT ok(NOT has_function_privilege('insurance_holder', 'dashboard.session_claims_or_deny(bytea)', 'EXECUTE'),
          'a holder cannot resolve dashboard sessions');

SELECT * FROM finish();
ROLLBACK;
