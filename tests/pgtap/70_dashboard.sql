-- Dashboard sessions, login attempt reservations and what a dashboard session may read.
BEGIN;
\ir helpers/common.psql
SELECT plan(30);

INSERT INTO insurance.dashboard_users (email, password_hash)
VALUES ('ops@pgtap.invalid', '$argon2id$v=19$m=8,t=1,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA');

-- login_user reserves an attempt, then gives the hash of an active user, NULL for anyone else.
SELECT is(dashboard.login_user('OPS@pgtap.invalid', '192.0.2.1') ->> 'passwordHash',
          '$argon2id$v=19$m=8,t=1,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA', 'login_user finds the user by e-mail, any case');
SELECT is(dashboard.login_user('nobody@pgtap.invalid', '192.0.2.1'), NULL, 'an unknown e-mail gives NULL');

-- Five attempts per (e-mail, address) are reserved before any verification; the sixth from that
-- address is refused and reserves nothing, and says when to come back; the same e-mail from
-- another address may still try (a lockout cannot be aimed at the owner elsewhere).
SELECT dashboard.login_user('ops@pgtap.invalid', '192.0.2.1') FROM generate_series(1, 4);
SELECT is(dashboard.login_user('ops@pgtap.invalid', '192.0.2.1') ->> 'error', 'RATE_LIMITED',
          'the sixth attempt from that address is refused');
SELECT is((SELECT failures FROM insurance.dashboard_login_failures WHERE key = 'email+ip:ops@pgtap.invalid|192.0.2.1'), 5,
          'a refused attempt reserves nothing');
SELECT ok((dashboard.login_user('ops@pgtap.invalid', '192.0.2.1') ->> 'retryAfter')::int BETWEEN 1 AND 900,
          'the refusal says in seconds when to come back');
SELECT is(dashboard.login_user('ops@pgtap.invalid', '192.0.2.9') ->> 'passwordHash',
          '$argon2id$v=19$m=8,t=1,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA', 'the same e-mail from another address may try');
SELECT is(dashboard.login_user('other@pgtap.invalid', '192.0.2.1'), NULL, 'another e-mail from the same address may try');

-- A window that has ended starts again from one attempt.
-- 15 minutes and a second later (the window is 15 minutes):
SELECT pg_temp.age_rows('insurance.dashboard_login_failures', '15 minutes 1 second',
                        $$key = 'email+ip:ops@pgtap.invalid|192.0.2.1'$$);
SELECT is(dashboard.login_user('ops@pgtap.invalid', '192.0.2.1') ->> 'error', NULL, 'an ended window unlocks');
SELECT is((SELECT failures FROM insurance.dashboard_login_failures WHERE key = 'email+ip:ops@pgtap.invalid|192.0.2.1'), 1,
          'an attempt after the window counts from one');
SELECT is((SELECT failures FROM insurance.dashboard_login_failures WHERE key = 'ip:192.0.2.1'), 8,
          'the address counter keeps counting in its own window');
SELECT is((SELECT failures FROM insurance.dashboard_login_failures WHERE key = 'email:ops@pgtap.invalid'), 7,
          'and so does the account''s, over every address');

-- login_succeeded opens a session only for the hash the app verified, and refunds the attempt.
SELECT throws_ok($$SELECT dashboard.login_succeeded('ops@pgtap.invalid', '$argon2id$other', '\x01'::bytea || decode(repeat('00', 31), 'hex'),
                                                    3600, NULL, 'pgtap')$$,
                 'PT401', 'invalid e-mail or password', 'a hash that is not the stored one opens nothing');
SELECT is((SELECT dashboard.login_succeeded('ops@pgtap.invalid', '$argon2id$v=19$m=8,t=1,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA',
                                            public.digest('token-1', 'sha256'), 3600, '192.0.2.1', 'pgtap')) ->> 'email',
          'ops@pgtap.invalid', 'login_succeeded opens a session');
SELECT is((SELECT count(*)::int FROM insurance.dashboard_login_failures WHERE key = 'email+ip:ops@pgtap.invalid|192.0.2.1'), 0,
          'a success clears its own (e-mail, address) counter');
SELECT is(ARRAY(SELECT failures FROM insurance.dashboard_login_failures
                 WHERE key IN ('ip:192.0.2.1', 'email:ops@pgtap.invalid') ORDER BY key),
          ARRAY[6, 7], 'and gives the account and the address their attempt back, no more');

-- The account-wide ceiling (100 in the window) stops guessing spread over many addresses: one
-- audit row and one count per window, however many refusals follow.
UPDATE insurance.dashboard_login_failures SET failures = 100 WHERE key = 'email:ops@pgtap.invalid';
CREATE TEMP TABLE _trips AS SELECT coalesce((SELECT trips FROM insurance.account_ceiling_counts
                                              WHERE kind = 'dashboard_login'), 0) AS before;
SELECT is(ARRAY(SELECT dashboard.login_user('ops@pgtap.invalid', format('198.51.100.%s', n)::inet) ->> 'error'
                  FROM generate_series(1, 3) n),
          ARRAY['RATE_LIMITED', 'RATE_LIMITED', 'RATE_LIMITED'], 'past the ceiling every address is refused');
SELECT is((SELECT count(*)::int FROM insurance.audit_log WHERE action = 'limits.account_ceiling'
            AND targets = '["ops@pgtap.invalid"]' AND details ->> 'kind' = 'dashboard_login' AND result = 'RATE_LIMITED'),
          1, 'the trip is audited once');
SELECT is((SELECT trips FROM insurance.account_ceiling_counts WHERE kind = 'dashboard_login') - (SELECT before FROM _trips), 1::bigint,
          'and counted once, for /metrics');
SELECT throws_ok($$SELECT dashboard.login_succeeded('ops@pgtap.invalid', 'x', public.digest('t', 'sha256'), 10, NULL, NULL)$$,
                 '22023', NULL, 'a session lifetime under a minute is refused');

-- session_claims: live sessions only.
SELECT is(dashboard.session_claims(public.digest('token-1', 'sha256')) ->> 'role', 'dashboard', 'a live session has claims');
SELECT is(dashboard.session_claims(public.digest('token-2', 'sha256')), NULL, 'an unknown token has none');
-- An hour and a second later (the session lives an hour):
SELECT pg_temp.age_rows('insurance.dashboard_sessions', '1 hour 1 second', $$token_hash = public.digest('token-1', 'sha256')$$);
SELECT is(dashboard.session_claims(public.digest('token-1', 'sha256')), NULL, 'an expired session has none');
SELECT pg_temp.age_rows('insurance.dashboard_sessions', '-1 hour -1 second', $$token_hash = public.digest('token-1', 'sha256')$$);
SELECT ok(dashboard.logout(public.digest('token-1', 'sha256')), 'logout revokes a live session');
SELECT is(dashboard.session_claims(public.digest('token-1', 'sha256')), NULL, 'a revoked session has none');

-- What the dashboard role reads: nothing without a session's claims, everything with them.
INSERT INTO insurance.packages (uid, name, post_sales_integration_slug) VALUES ('pgtap-dash', 'Dash', 'PROVIDER_B');
INSERT INTO insurance.package_variants (package_id, code, name) SELECT id, 'travel', 'Travel' FROM insurance.packages WHERE uid = 'pgtap-dash';
INSERT INTO insurance.risk_items (package_id, policy_uid, variant) SELECT id, 'PGTAP-DASH-1', 'travel' FROM insurance.packages WHERE uid = 'pgtap-dash';
INSERT INTO insurance.integration_emissions (risk_item_id, provider, event, status, attempts, next_retry_at, error_history)
SELECT r.id, p, 'POLICY_CREATED', 'FAILED', 2, now() + interval '1 minute', '[{"code": "OLD"}, {"code": "PROVIDER_UNAVAILABLE"}]'
  FROM insurance.risk_items r, unnest(ARRAY['PROVIDER_A', 'PROVIDER_B', 'MAIL_PROVIDER']) p WHERE r.policy_uid = 'PGTAP-DASH-1';
CREATE TEMP TABLE _item AS SELECT id FROM insurance.risk_items WHERE policy_uid = 'PGTAP-DASH-1';
GRANT SELECT ON _item TO insurance_dashboard;

SELECT pg_temp.act_as('insurance_dashboard');
SELECT is((SELECT count(*)::int FROM insurance.integration_emissions), 0, 'no claims: the dashboard role sees no emission');
SELECT throws_ok($$SELECT dashboard.risk_item_emissions((SELECT id FROM _item))$$, 'PT404', 'risk item not found',
                 'no claims: the risk item does not exist for it');
SELECT pg_temp.with_claims('{"sub": "1", "role": "dashboard"}');
SELECT is((SELECT dashboard.risk_item_emissions((SELECT id FROM _item)) #>> '{emissions,0,lastError,code}'),
          'PROVIDER_UNAVAILABLE', 'a session reads the emissions of an item, with the newest error');
SELECT is((SELECT jsonb_array_length(dashboard.list_emissions(NULL, NULL, NULL, NULL, NULL, NULL, 100) -> 'items') >= 3), true,
          'and lists them');
CREATE TEMP TABLE _page1 AS SELECT dashboard.list_emissions('{FAILED}', NULL, NULL, now(), NULL, NULL, 2) AS page;
SELECT is((SELECT jsonb_array_length(page -> 'items') FROM _page1), 2, 'a page holds at most limit items');
SELECT is((SELECT jsonb_array_length(p.page -> 'items') || '/' || coalesce(p.page ->> 'nextCursor', 'end')
             FROM _page1, LATERAL (SELECT dashboard.list_emissions('{FAILED}', NULL, NULL, now(), NULL,
                                                                   (_page1.page ->> 'nextCursor')::bigint, 2) AS page) p),
          '1/end', 'the next cursor gives the rest, and the last page has no cursor');
SELECT pg_temp.as_operator();

SELECT * FROM finish();
ROLLBACK;
