-- What an operator needs is on the back-office's screen (issue 42): each search result carries
-- its emissions in the state the emissions page shows, so that the match in trouble is seen
-- without opening each; the audit page names the channels its rows target, which the dashboard
-- role cannot read itself.
BEGIN;
\ir helpers/common.psql
SELECT plan(6);

INSERT INTO insurance.packages (uid, name, sales_integration_slug) VALUES ('pgtap-screen', 'Screen gold', 'PROVIDER_A');
INSERT INTO insurance.package_variants (package_id, code, name, coverages, premium)
SELECT id, 'travel', 'Travel', '[]', 10 FROM insurance.packages WHERE uid = 'pgtap-screen';
INSERT INTO insurance.risk_items (package_id, policy_uid, variant)
SELECT p.id, 'SCREEN-' || n, 'travel' FROM insurance.packages p, generate_series(1, 2) AS n WHERE p.uid = 'pgtap-screen';
INSERT INTO insurance.integration_emissions (risk_item_id, provider, event, status, next_retry_at)
SELECT r.id, 'PROVIDER_A', e.event, e.status, CASE WHEN e.status = 'FAILED' THEN now() - interval '1 minute' END
  FROM insurance.risk_items r
  JOIN (VALUES ('SCREEN-1', 'SALES_DISPATCH', 'ABANDONED'), ('SCREEN-1', 'POLICY_CREATED', 'FAILED'),
               ('SCREEN-2', 'SALES_DISPATCH', 'SUCCESS')) e(policy, event, status) ON e.policy = r.policy_uid;
INSERT INTO insurance.channels (id, name, api_key_hash)
VALUES ('c4a1e5a0-0000-4000-8000-000000000042', 'Partner on screen', public.digest('pgtap-screen-key', 'sha256'));
SELECT insurance.record_audit('cli:pgtap', 'channels.revoke', '["c4a1e5a0-0000-4000-8000-000000000042"]');
SELECT insurance.record_audit('cli:pgtap', 'channels.rotate', '["00000000-0000-4000-8000-00000000dead"]');
SELECT insurance.record_audit('cli:pgtap', 'orders.create', '["c4a1e5a0-0000-4000-8000-000000000042"]');

SELECT pg_temp.act_as('insurance_dashboard', '{"sub": "1", "role": "dashboard", "email": "ops@pgtap.invalid"}');

-- 1. Search: each match with its emissions' states.
SELECT is((SELECT jsonb_agg(jsonb_build_object('policy', i ->> 'policyUid', 'emissions',
                                               (SELECT jsonb_agg(e - 'id' ORDER BY e ->> 'event') FROM jsonb_array_elements(i -> 'emissions') e))
                            ORDER BY i ->> 'policyUid')
             FROM jsonb_array_elements(dashboard.search('screen-') -> 'items') i),
          '[{"policy": "SCREEN-1", "emissions": [{"event": "POLICY_CREATED", "provider": "PROVIDER_A", "state": "RETRY_QUEUED"},
                                                 {"event": "SALES_DISPATCH", "provider": "PROVIDER_A", "state": "ABANDONED"}]},
            {"policy": "SCREEN-2", "emissions": [{"event": "SALES_DISPATCH", "provider": "PROVIDER_A", "state": "SUCCESS"}]}]',
          'each search result carries its emissions, each in the state the emissions page shows');
SELECT is((SELECT (i -> 'emissions' -> 0 ->> 'id')::bigint FROM jsonb_array_elements(dashboard.search('SCREEN-2') -> 'items') i),
          (SELECT e.id FROM insurance.integration_emissions e JOIN insurance.risk_items r ON r.id = e.risk_item_id
            WHERE r.policy_uid = 'SCREEN-2'), 'with its id, for a link to its page');

-- 2. Audit: the channels by name, as the dashboard role (the newest three rows: the ones above).
SELECT is(dashboard.list_audit(NULL, 3) -> 'channels' ->> 'c4a1e5a0-0000-4000-8000-000000000042', 'Partner on screen',
          'the audit page names the channel a channels row targets');
SELECT ok(NOT (dashboard.list_audit(NULL, 3) -> 'channels') ? '00000000-0000-4000-8000-00000000dead',
          'a channel that is gone keeps its id');
SELECT is((SELECT count(*) FROM jsonb_object_keys(dashboard.list_audit(NULL, 3) -> 'channels')), 1::bigint,
          'only the channels of channels rows: another action''s uuid is no channel');
SELECT is(dashboard.list_audit(NULL, 1) -> 'channels', '{}', 'and only those of the page');

SELECT * FROM finish();
ROLLBACK;
