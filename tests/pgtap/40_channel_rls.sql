-- Channel RLS: a channel (role insurance_channel, claim sub = its id) sees and inserts only
-- its own risk items and beneficiaries.
BEGIN;
\ir helpers/common.psql
SELECT plan(14);

INSERT INTO insurance.channels (id, name, api_key_hash) VALUES
  ('aaaaaaaa-0000-4000-8000-000000000001', 'A', public.digest('key-a', 'sha256')),
  ('bbbbbbbb-0000-4000-8000-000000000002', 'B', public.digest('key-b', 'sha256'));
INSERT INTO insurance.packages (uid, name) VALUES ('rls-pkg', 'RLS');
INSERT INTO insurance.package_variants (package_id, code, name)
  SELECT id, 'travel', 'Travel' FROM insurance.packages WHERE uid = 'rls-pkg';
INSERT INTO insurance.channel_packages (channel_id, package_id)
  SELECT c.id, p.id FROM insurance.channels c, insurance.packages p
   WHERE p.uid = 'rls-pkg' AND c.id IN ('aaaaaaaa-0000-4000-8000-000000000001', 'bbbbbbbb-0000-4000-8000-000000000002');
INSERT INTO insurance.risk_items (package_id, channel_id, policy_uid, variant)
  SELECT p.id, c.channel_id, c.policy_uid, 'travel' FROM insurance.packages p,
         (VALUES ('aaaaaaaa-0000-4000-8000-000000000001'::uuid, 'RLS-A1'),
                 ('aaaaaaaa-0000-4000-8000-000000000001'::uuid, 'RLS-A2'),
                 ('bbbbbbbb-0000-4000-8000-000000000002'::uuid, 'RLS-B1')) AS c (channel_id, policy_uid)
   WHERE p.uid = 'rls-pkg';
INSERT INTO insurance.beneficiaries (risk_item_id, name)
  SELECT id, 'of ' || policy_uid FROM insurance.risk_items WHERE policy_uid LIKE 'RLS-%';
CREATE TEMP TABLE ids ON COMMIT DROP AS
  SELECT policy_uid, id FROM insurance.risk_items WHERE policy_uid LIKE 'RLS-%';
GRANT SELECT ON ids TO insurance_channel;

-- As channel A
SELECT pg_temp.act_as('insurance_channel', '{"sub": "aaaaaaaa-0000-4000-8000-000000000001"}');
SELECT results_eq($$SELECT policy_uid FROM insurance.risk_items ORDER BY policy_uid$$,
                  ARRAY['RLS-A1', 'RLS-A2'], 'A sees only its own risk items');
SELECT results_eq($$SELECT name FROM insurance.beneficiaries ORDER BY name$$,
                  ARRAY['of RLS-A1', 'of RLS-A2'], 'A sees only the beneficiaries of its items');
SELECT is_empty($$SELECT 1 FROM insurance.risk_items WHERE policy_uid = 'RLS-B1'$$,
                'a WHERE naming B''s item finds nothing');
SELECT lives_ok($$INSERT INTO insurance.risk_items (package_id, channel_id, policy_uid, variant)
                  SELECT id, 'aaaaaaaa-0000-4000-8000-000000000001', 'RLS-A3', 'travel'
                    FROM insurance.packages WHERE uid = 'rls-pkg'$$, 'A inserts an item of its own');
SELECT throws_ok($$INSERT INTO insurance.risk_items (package_id, channel_id, policy_uid, variant)
                   SELECT id, 'bbbbbbbb-0000-4000-8000-000000000002', 'RLS-A4', 'travel'
                     FROM insurance.packages WHERE uid = 'rls-pkg'$$,
                 '42501', NULL, 'A cannot insert an item for B');
SELECT throws_ok($$INSERT INTO insurance.risk_items (package_id, policy_uid, variant)
                   SELECT id, 'RLS-A5', 'travel' FROM insurance.packages WHERE uid = 'rls-pkg'$$,
                 '42501', NULL, 'A cannot insert an item without a channel');
SELECT lives_ok($$INSERT INTO insurance.beneficiaries (risk_item_id, name)
                  SELECT id, 'new of A1' FROM ids WHERE policy_uid = 'RLS-A1'$$,
                'A adds a beneficiary to its own item');
SELECT throws_ok($$INSERT INTO insurance.beneficiaries (risk_item_id, name)
                   SELECT id, 'sneaked into B1' FROM ids WHERE policy_uid = 'RLS-B1'$$,
                 '42501', NULL, 'A cannot add a beneficiary to B''s item');
SELECT throws_ok($$UPDATE insurance.risk_items SET insured_subject = '{"x": 1}'$$,
                 '42501', NULL, 'a channel has no UPDATE on risk items');

-- As channel B
SELECT pg_temp.with_claims('{"sub": "bbbbbbbb-0000-4000-8000-000000000002"}');
SELECT results_eq($$SELECT policy_uid FROM insurance.risk_items$$, ARRAY['RLS-B1'],
                  'B sees only its item, not the one A just made');
SELECT results_eq($$SELECT name FROM insurance.beneficiaries$$, ARRAY['of RLS-B1'],
                  'B sees only its beneficiaries');

-- No claims, or the other roles: nothing
SELECT pg_temp.with_claims(NULL);
SELECT is_empty($$SELECT 1 FROM insurance.risk_items$$, 'a channel without a sub sees nothing');
SELECT pg_temp.act_as('insurance_anon');
SELECT throws_ok($$SELECT 1 FROM insurance.risk_items$$, '42501', NULL, 'anon cannot read risk items');
SELECT throws_ok($$SELECT 1 FROM insurance.channels$$, '42501', NULL, 'anon cannot read channels');
SELECT pg_temp.as_operator();

SELECT * FROM finish();
ROLLBACK;
