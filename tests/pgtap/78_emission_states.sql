-- Each emission is in exactly one state (dashboard._emission_state), the same on every surface:
-- SUCCESS, IN_PROGRESS, ABANDONED, PAUSED, RETRY_QUEUED, FAILED. The counts per state add up to
-- the total, and each moved by exactly the rows its filter lists (the strip once said RETRY
-- QUEUED 4, IN PROGRESS 4 and FAILED 4 for four emissions, and the RETRY QUEUED filter listed
-- none). A settled emission says no retry is queued.
BEGIN;
\ir helpers/common.psql
SELECT plan(14);

INSERT INTO insurance.packages (uid, name) VALUES ('pgtap-states', 'States gold');
INSERT INTO insurance.package_variants (package_id, code, name, coverages, premium)
SELECT id, 'travel', 'Travel', '[]', 10 FROM insurance.packages WHERE uid = 'pgtap-states';
INSERT INTO insurance.risk_items (package_id, policy_uid, variant)
SELECT p.id, 'STATES-' || n, 'travel' FROM insurance.packages p, generate_series(1, 9) AS n WHERE p.uid = 'pgtap-states';

SELECT pg_temp.act_as('insurance_dashboard', '{"sub": "1", "role": "dashboard", "email": "ops@pgtap.invalid"}');
CREATE TEMP TABLE before AS SELECT dashboard.emission_counts() AS c;
SELECT pg_temp.as_operator();

-- One emission per case: (policy, provider, status, due, claimed, expected state).
CREATE TEMP TABLE cases (policy text, provider text, status text, due boolean, claimed boolean, state text);
INSERT INTO cases VALUES
  ('STATES-1', 'PROVIDER_ST', 'SUCCESS',   NULL,  false, 'SUCCESS'),
  ('STATES-2', 'PROVIDER_ST', 'FAILED',    true,  true,  'IN_PROGRESS'),   -- a worker holds it: not queued, not failed
  ('STATES-3', 'PROVIDER_ST', 'ABANDONED', NULL,  false, 'ABANDONED'),
  ('STATES-4', 'PROVIDER_SP', 'FAILED',    true,  false, 'PAUSED'),        -- its provider is paused: waits
  ('STATES-5', 'PROVIDER_ST', 'FAILED',    true,  false, 'RETRY_QUEUED'),
  ('STATES-6', 'PROVIDER_ST', 'FAILED',    false, false, 'FAILED'),        -- its next retry later
  ('STATES-7', 'PROVIDER_ST', 'ABANDONED', NULL,  true,  'IN_PROGRESS'),
  ('STATES-8', 'PROVIDER_SP', 'FAILED',    false, true,  'IN_PROGRESS'),   -- a call started before the pause
  ('STATES-9', 'PROVIDER_SP', 'SUCCESS',   NULL,  false, 'SUCCESS');
GRANT SELECT ON cases TO insurance_dashboard;
INSERT INTO insurance.provider_pauses (provider) VALUES ('PROVIDER_SP');
INSERT INTO insurance.integration_emissions (risk_item_id, provider, event, status, attempts, next_retry_at)
SELECT r.id, c.provider, 'SALES_DISPATCH', c.status, 1,
       CASE WHEN c.status = 'FAILED' THEN now() + CASE WHEN c.due THEN interval '-1 minute' ELSE interval '1 hour' END END
  FROM cases c JOIN insurance.risk_items r ON r.policy_uid = c.policy;
INSERT INTO insurance.emission_claims (risk_item_id, provider, event, claimed_by, lease_until)
SELECT r.id, c.provider, 'SALES_DISPATCH', 'pgtap', now() + interval '1 minute'
  FROM cases c JOIN insurance.risk_items r ON r.policy_uid = c.policy WHERE c.claimed;
-- A late /retry row of a settled emission (it sends nothing: the claim answers SUCCESS).
INSERT INTO outbox.http_requests (url, body)
SELECT '/api/integrations/retry', jsonb_build_object('emissionId', e.id)
  FROM insurance.integration_emissions e JOIN insurance.risk_items r ON r.id = e.risk_item_id WHERE r.policy_uid = 'STATES-1';

SELECT pg_temp.act_as('insurance_dashboard', '{"sub": "1", "role": "dashboard", "email": "ops@pgtap.invalid"}');
CREATE TEMP TABLE listed AS
SELECT s.state, i ->> 'policyUid' AS policy, i ->> 'state' AS said
  FROM unnest(ARRAY['SUCCESS', 'IN_PROGRESS', 'ABANDONED', 'PAUSED', 'RETRY_QUEUED', 'FAILED']) s(state)
 CROSS JOIN LATERAL jsonb_array_elements(
         (dashboard.list_emissions(ARRAY[s.state], NULL, NULL, NULL, NULL, NULL, 100) -> 'items')) i
 WHERE i ->> 'policyUid' LIKE 'STATES-%';
CREATE TEMP TABLE after AS SELECT dashboard.emission_counts() AS c;

SELECT is((SELECT array_agg(policy || ' ' || state ORDER BY policy, state) FROM listed),
          (SELECT array_agg(policy || ' ' || state ORDER BY policy) FROM cases),
          'each emission is listed under exactly one state filter, its own');
SELECT is((SELECT count(*) FROM listed WHERE said <> state), 0::bigint, 'and says the state it is listed under');
SELECT is((SELECT array_agg(i ->> 'state' ORDER BY i ->> 'policyUid') FROM jsonb_array_elements(
             dashboard.list_emissions(NULL, NULL, NULL, NULL, NULL, NULL, 100) -> 'items') i WHERE i ->> 'policyUid' LIKE 'STATES-%'),
          (SELECT array_agg(state ORDER BY policy) FROM cases), 'the unfiltered list says the same states');
SELECT is((SELECT array_agg(dashboard.emission_state(e.id) ->> 'state' ORDER BY r.policy_uid)
             FROM insurance.integration_emissions e JOIN insurance.risk_items r ON r.id = e.risk_item_id
            WHERE r.policy_uid LIKE 'STATES-%'),
          (SELECT array_agg(state ORDER BY policy) FROM cases), 'the emission''s page (its live state) says the same');
SELECT is((SELECT array_agg(e ->> 'state' ORDER BY e ->> 'policyUid')
             FROM insurance.risk_items r CROSS JOIN LATERAL jsonb_array_elements(dashboard.risk_item_emissions(r.id) -> 'emissions') e
            WHERE r.policy_uid LIKE 'STATES-%'),
          (SELECT array_agg(state ORDER BY policy) FROM cases), 'the risk item''s page says the same');

SELECT is((SELECT jsonb_object_agg(k, (a.c ->> k)::bigint - (b.c ->> k)::bigint)
             FROM after a, before b, jsonb_object_keys(a.c) k),
          '{"SUCCESS": 2, "IN_PROGRESS": 3, "ABANDONED": 1, "PAUSED": 1, "RETRY_QUEUED": 1, "FAILED": 1, "total": 9}'::jsonb,
          'each count moved by the rows its filter lists');
SELECT is((SELECT sum(v::bigint)::bigint FROM after a, jsonb_each_text(a.c - 'total') AS x(k, v)), (SELECT (c ->> 'total')::bigint FROM after),
          'the counts add up to the total');
SELECT is((SELECT sum(v::bigint)::bigint FROM before b, jsonb_each_text(b.c - 'total') AS x(k, v)), (SELECT (c ->> 'total')::bigint FROM before),
          'they did before too');

SELECT is((SELECT dashboard.emission_detail(e.id) -> 'retryPending' FROM insurance.integration_emissions e
             JOIN insurance.risk_items r ON r.id = e.risk_item_id WHERE r.policy_uid = 'STATES-1'), 'false'::jsonb,
          'a SUCCESS emission says no retry is queued, whatever late /retry row waits');
SELECT ok((SELECT dashboard.emission_detail(e.id) -> 'pause' ? 'pausedAt' FROM insurance.integration_emissions e
             JOIN insurance.risk_items r ON r.id = e.risk_item_id WHERE r.policy_uid = 'STATES-4'),
          'a PAUSED emission''s page names the pause');

-- Retry every row that matches: a state filter matches what the list shows under it.
SELECT is((dashboard.retry_matching(ARRAY['RETRY_QUEUED'], 'PROVIDER_ST', NULL, NULL, NULL, 100, true, 'backoffice') ->> 'matched')::int,
          1, 'retry every RETRY_QUEUED row matches the one the filter lists');
SELECT is((dashboard.retry_matching(ARRAY['FAILED'], NULL, NULL, NULL, NULL, 100, true, 'backoffice') ->> 'matched')::int,
          (SELECT (c ->> 'FAILED')::int FROM after), 'retry every FAILED row matches the FAILED count');

-- The pause ended: the paused one is due again, nothing else moved.
SELECT pg_temp.as_operator();
DELETE FROM insurance.provider_pauses WHERE provider = 'PROVIDER_SP';
SELECT pg_temp.act_as('insurance_dashboard', '{"sub": "1", "role": "dashboard", "email": "ops@pgtap.invalid"}');
SELECT is((SELECT dashboard.emission_state(e.id) ->> 'state' FROM insurance.integration_emissions e
             JOIN insurance.risk_items r ON r.id = e.risk_item_id WHERE r.policy_uid = 'STATES-4'),
          'RETRY_QUEUED', 'once resumed, a paused emission that is due is RETRY_QUEUED');
SELECT is((dashboard.emission_counts() ->> 'PAUSED')::bigint, (SELECT (c ->> 'PAUSED')::bigint - 1 FROM after),
          'and no longer counted PAUSED');
SELECT pg_temp.as_operator();

SELECT * FROM finish();
ROLLBACK;
