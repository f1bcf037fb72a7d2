-- The operator's pages of issue 30, in SQL: a policy number's beginning finds it through its
-- index (no sequential scan, on a table filled and analysed as production fills it, and the
-- generic plan that a plpgsql body keeps says so); partner webhook deliveries of an emission
-- through theirs; the counts per state come from the kept counts; "retry every row that
-- matches" is capped and audited once; people are managed from the back-office, audited via
-- backoffice; a disabled user's login says so only to the app, which checks the password first.
BEGIN;
\ir helpers/common.psql
SELECT plan(21);

-- EXPLAIN's text of a query, as the plan the generic (parameterised) statement gets.
CREATE FUNCTION pg_temp.plan_of(_query text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  _line text;
  _plan text := '';
BEGIN
  FOR _line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || _query LOOP
    _plan := _plan || _line || E'\n';
  END LOOP;
  RETURN _plan;
END
$$;

INSERT INTO insurance.packages (uid, name) VALUES ('pgtap-operator', 'Operator gold');
INSERT INTO insurance.package_variants (package_id, code, name, coverages, premium)
SELECT id, 'travel', 'Travel', '[]', 10 FROM insurance.packages WHERE uid = 'pgtap-operator';
INSERT INTO insurance.risk_items (package_id, policy_uid, variant)
SELECT p.id, 'OPS-' || n, 'travel' FROM insurance.packages p, generate_series(1, 600) AS n WHERE p.uid = 'pgtap-operator';
INSERT INTO insurance.integration_emissions (risk_item_id, provider, event, status, external_id)
SELECT r.id, 'PROVIDER_A', 'SALES_DISPATCH', 'SUCCESS', 'PA-' || r.policy_uid
  FROM insurance.risk_items r WHERE r.policy_uid LIKE 'OPS-%';
ANALYZE insurance.risk_items, insurance.integration_emissions, outbox.http_requests;
CREATE TEMP TABLE scans_before AS
SELECT relname, seq_scan FROM pg_stat_xact_user_tables WHERE schemaname = 'insurance' AND relname = 'risk_items';
GRANT SELECT ON scans_before TO insurance_dashboard;

-- 1. Search by a policy number's beginning.
SELECT pg_temp.act_as('insurance_dashboard', '{"sub": "1", "role": "dashboard", "email": "ops@pgtap.invalid"}');
SELECT is((SELECT array_agg(i ->> 'policyUid' ORDER BY i ->> 'policyUid') FROM jsonb_array_elements(dashboard.search('ops-59') -> 'items') i),
          ARRAY['OPS-59', 'OPS-590', 'OPS-591', 'OPS-592', 'OPS-593', 'OPS-594', 'OPS-595', 'OPS-596', 'OPS-597',
                'OPS-598', 'OPS-599'],
          'a beginning finds every policy number that begins with it, in any case');
SELECT is((SELECT jsonb_agg(DISTINCT i -> 'matched') FROM jsonb_array_elements(dashboard.search('OPS-59') -> 'items') i),
          '[["policy number"], ["policy number prefix"]]', 'each saying whether the number or its beginning matched');
SELECT ok(dashboard.search('OPS-1') -> 'truncated' = 'true' AND jsonb_array_length(dashboard.search('OPS-1') -> 'items') = 50,
          'a short beginning lists the first 50 and says there are more');
SELECT is(dashboard.search('OPS-59%') -> 'items', '[]', 'LIKE''s wildcards are plain characters');
SELECT is(dashboard.search('ops-7') -> 'searched',
          '["policy number", "policy number prefix", "external id", "holder or beneficiary e-mail"]',
          'the answer says what was searched');
SELECT is((SELECT sum(seq_scan) FROM pg_stat_xact_user_tables WHERE schemaname = 'insurance' AND relname = 'risk_items'),
          (SELECT sum(seq_scan) FROM scans_before), 'no search scanned the risk items');
SELECT pg_temp.as_operator();
-- As dashboard._policy_prefix_ids plans it: once per session (a plpgsql body keeps a generic
-- plan), with its SET clauses (no sequential scan, no bitmap scan, no sort: the first 51 in index order).
SET LOCAL plan_cache_mode = force_generic_plan;
SET LOCAL enable_seqscan = off;
SET LOCAL enable_bitmapscan = off;
SET LOCAL enable_sort = off;
PREPARE prefix_lookup(text) AS
  SELECT r.id FROM insurance.risk_items r
   WHERE lower(r.policy_uid) ~>=~ $1 AND lower(r.policy_uid) ~<~ ($1 || U&'\+10FFFF') AND lower(r.policy_uid) <> $1
   ORDER BY lower(r.policy_uid) USING ~<~ LIMIT 51;
SELECT matches(pg_temp.plan_of($$EXECUTE prefix_lookup('ops-12')$$), 'Index (Only )?Scan using risk_items_policy_uid_prefix_idx',
               'EXPLAIN: the beginning is a range of risk_items_policy_uid_prefix_idx, in its generic plan');
SELECT doesnt_match(pg_temp.plan_of($$EXECUTE prefix_lookup('ops-12')$$), 'Seq Scan|Sort', 'EXPLAIN: no sequential scan, no sort');
RESET enable_seqscan;
RESET enable_bitmapscan;
RESET enable_sort;

-- 2. Webhook deliveries of an emission: through their index, with the planner's own settings
-- (dashboard._emission_webhooks sets none), among many partners' deliveries.
INSERT INTO outbox.http_requests (url, body, channel_id, delivered_at)
SELECT 'https://hooks.pgtap.invalid/h', jsonb_build_object('type', 'emission.succeeded', 'data', jsonb_build_object('emissionId', n)),
       '00000000-0000-4000-8000-000000000001', now()
  FROM generate_series(1, 1000) AS n;
ANALYZE outbox.http_requests;
PREPARE webhooks_of(bigint[]) AS
  SELECT o.id FROM outbox.http_requests o
   WHERE o.channel_id IS NOT NULL AND (o.body #>> '{data,emissionId}')::bigint = ANY ($1);
SELECT matches(pg_temp.plan_of($$EXECUTE webhooks_of(ARRAY[1, 2])$$),
               '^[^\n]*(Index Scan using|Bitmap Heap Scan on http_requests o\n[^\n]*\n *->  Bitmap Index Scan on) http_requests_webhook_emission_idx',
               'EXPLAIN: the deliveries of an emission are an index lookup');
RESET plan_cache_mode;

-- 3. Counts per state: the kept counts (a delta with no row behind it moves them).
INSERT INTO insurance.integration_emissions (risk_item_id, provider, event, status, attempts, next_retry_at)
SELECT r.id, 'PROVIDER_OPS', 'POLICY_CREATED', s.status, 1, CASE WHEN s.status = 'FAILED' THEN now() - interval '1 minute' END
  FROM insurance.risk_items r
  JOIN (VALUES ('OPS-1', 'FAILED'), ('OPS-2', 'ABANDONED'), ('OPS-3', 'ABANDONED'), ('OPS-4', 'FAILED'),
               ('OPS-5', 'ABANDONED')) s(policy, status) ON s.policy = r.policy_uid;
SELECT insurance.fold_emission_counts() IS NOT NULL AS folded;
CREATE TEMP TABLE kept AS SELECT status, sum(count) AS n FROM insurance.emission_counts GROUP BY status;
INSERT INTO insurance.emission_count_deltas (status, provider, delta) VALUES ('SUCCESS', 'PGTAP_NO_ROWS', 1000);
SELECT pg_temp.act_as('insurance_dashboard', '{"sub": "1", "role": "dashboard", "email": "ops@pgtap.invalid"}');
SELECT ok((dashboard.emission_counts() ->> 'SUCCESS')::bigint >= 1600, 'SUCCESS counts the kept delta of rows that are not there');
SELECT pg_temp.as_operator();
SELECT is((SELECT sum(count) FROM insurance.emission_counts WHERE status = 'SUCCESS'),
          (SELECT n FROM kept WHERE status = 'SUCCESS') + 1000, 'the page folded the deltas into the kept counts');
SELECT pg_temp.act_as('insurance_dashboard', '{"sub": "1", "role": "dashboard", "email": "ops@pgtap.invalid"}');
SELECT ok((dashboard.emission_counts() ->> 'RETRY_QUEUED')::bigint >= 2, 'RETRY_QUEUED: the due FAILED rows');
SELECT is((SELECT array_agg(i ->> 'state') FROM jsonb_array_elements(
             dashboard.list_emissions(ARRAY['RETRY_QUEUED'], 'PROVIDER_OPS', NULL, NULL, NULL, NULL, 10) -> 'items') i),
          ARRAY['RETRY_QUEUED', 'RETRY_QUEUED'], 'the RETRY_QUEUED filter lists the due FAILED rows, each saying RETRY_QUEUED');

-- 4. Retry every row that matches: asked first, capped, one audit row.
SELECT is(dashboard.retry_matching(NULL, 'PROVIDER_OPS', NULL, NULL, NULL, 500, true, 'backoffice'),
          '{"matched": 5, "capped": false, "queued": 0}', 'asking counts the FAILED and ABANDONED rows that match');
SELECT pg_temp.as_operator();
SELECT is((SELECT count(*) FROM insurance.integration_emissions WHERE provider = 'PROVIDER_OPS' AND status = 'ABANDONED'),
          3::bigint, 'asking changes nothing');
SELECT pg_temp.act_as('insurance_dashboard', '{"sub": "1", "role": "dashboard", "email": "ops@pgtap.invalid"}');
SELECT is(dashboard.retry_matching(ARRAY['ABANDONED'], 'PROVIDER_OPS', NULL, NULL, NULL, 2, false, 'backoffice'),
          '{"matched": 2, "capped": true, "queued": 2}', 'at most the cap, newest first, and it says more matched');
SELECT pg_temp.as_operator();
SELECT is((SELECT count(*) FROM insurance.audit_log WHERE action = 'emissions.retry_all' AND actor = 'dashboard:ops@pgtap.invalid'
              AND via = 'backoffice' AND jsonb_array_length(targets) = 2), 1::bigint,
          'one audit row for the whole action, naming every id');

-- 5. People from the back-office. The session's own user is enabled, as a live session's user
--    always is (the page never disables the last enabled operator).
INSERT INTO insurance.dashboard_users (email, password_hash)
VALUES ('colleague@pgtap.invalid', '$argon2id$v=19$m=8,t=1,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA'),
       ('ops@pgtap.invalid', '$argon2id$v=19$m=8,t=1,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA')
    ON CONFLICT DO NOTHING;
INSERT INTO insurance.dashboard_sessions (token_hash, user_id, expires_at)
SELECT public.digest('colleague-' || n, 'sha256'), u.id, now() + interval '1 hour'
  FROM insurance.dashboard_users u, generate_series(1, 2) AS n WHERE u.email = 'colleague@pgtap.invalid';
SELECT pg_temp.act_as('insurance_dashboard', '{"sub": "1", "role": "dashboard", "email": "ops@pgtap.invalid"}');
SELECT is(dashboard.disable_user('COLLEAGUE@pgtap.invalid'),
          '{"email": "colleague@pgtap.invalid", "active": false, "sessionsEnded": 2}', 'disable from the page ends the sessions');
SELECT pg_temp.as_operator();
SELECT is((SELECT row(actor, via, result)::text FROM insurance.audit_log WHERE action = 'users.disable' ORDER BY id DESC LIMIT 1),
          '(dashboard:ops@pgtap.invalid,backoffice,ok)', 'audited as the session''s user, via backoffice');
SELECT pg_temp.act_as('insurance_anon');
SELECT is(dashboard.login_user('colleague@pgtap.invalid', '192.0.2.1') ->> 'active', 'false',
          'the login of a disabled user answers active false (the app says so after the password check)');
SELECT pg_temp.act_as('insurance_holder', '{"email": "colleague@pgtap.invalid", "sub": "colleague@pgtap.invalid"}');
SELECT throws_ok($$SELECT dashboard.enable_user('colleague@pgtap.invalid')$$, '42501', NULL,
                 'only the dashboard role manages people');
SELECT pg_temp.as_operator();

SELECT * FROM finish();
ROLLBACK;
