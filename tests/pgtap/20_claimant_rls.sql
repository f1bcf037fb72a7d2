-- Claimant RLS (the holder policies of risk_items_holder_policies, beneficiaries, authorized_claimants, risk_item_documents): a holder sees exactly the items with a claimant row for the
-- token's e-mail, writes nothing outside them, and the trigger mirrors holder e-mails.
BEGIN;
\ir helpers/common.psql
\ir helpers/holder.psql
SELECT plan(17);

-- rows_changed(sql): how many rows a statement changed (run as the current role).
CREATE FUNCTION pg_temp.rows_changed(sql text) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE _n integer;
BEGIN EXECUTE sql; GET DIAGNOSTICS _n = ROW_COUNT; RETURN _n; END $$;
CREATE FUNCTION pg_temp.claimants(policy text) RETURNS text[] LANGUAGE sql AS $$
  SELECT coalesce(array_agg(email ORDER BY email), '{}') FROM insurance.authorized_claimants
   WHERE risk_item_id = pg_temp.item(policy) $$;

INSERT INTO insurance.packages (uid, name) VALUES ('pgtap-rls', 'RLS package');
INSERT INTO insurance.package_variants (package_id, code, name)
SELECT id, 'travel', 'Travel' FROM insurance.packages WHERE uid = 'pgtap-rls';
INSERT INTO insurance.risk_items (package_id, policy_uid, variant, insured_subject)
SELECT id, p, 'travel', '{"phone": "1"}' FROM insurance.packages, unnest(ARRAY['rls-a', 'rls-b', 'rls-c']) p
 WHERE uid = 'pgtap-rls';
INSERT INTO insurance.beneficiaries (risk_item_id, name, email, is_holder, share) VALUES
  (pg_temp.item('rls-a'), 'Ann', 'ann@example.com', true, 50),
  (pg_temp.item('rls-a'), 'Kid', 'kid@example.com', false, 50),
  (pg_temp.item('rls-b'), 'Ann', 'ann@example.com', true, 100),
  (pg_temp.item('rls-c'), 'Bob', 'bob@example.com', true, 100);

-- ---------------------------------------------------------------- the mirroring trigger
SELECT is(pg_temp.claimants('rls-a'), ARRAY['ann@example.com'], 'a holder gets a claimant row; a non-holder none');
UPDATE insurance.beneficiaries SET is_holder = true WHERE email = 'kid@example.com';
SELECT is(pg_temp.claimants('rls-a'), ARRAY['ann@example.com', 'kid@example.com'], 'becoming holder adds the row');
UPDATE insurance.beneficiaries SET email = 'kid2@example.com' WHERE email = 'kid@example.com';
SELECT is(pg_temp.claimants('rls-a'), ARRAY['ann@example.com', 'kid2@example.com'], 'a changed e-mail moves the row');
UPDATE insurance.beneficiaries SET is_holder = false WHERE email = 'kid2@example.com';
SELECT is(pg_temp.claimants('rls-a'), ARRAY['ann@example.com'], 'no longer holder: the row goes');
INSERT INTO insurance.beneficiaries (risk_item_id, name, email, is_holder) VALUES
  (pg_temp.item('rls-c'), 'Bob again', 'bob@example.com', true);
DELETE FROM insurance.beneficiaries WHERE name = 'Bob again';
SELECT is(pg_temp.claimants('rls-c'), ARRAY['bob@example.com'], 'removing one of two holder rows of an e-mail keeps access');
INSERT INTO insurance.beneficiaries (risk_item_id, name, email, is_holder) VALUES
  (pg_temp.item('rls-c'), 'Cy', 'cy@example.com', true);
DELETE FROM insurance.beneficiaries WHERE email = 'cy@example.com';
SELECT is(pg_temp.claimants('rls-c'), ARRAY['bob@example.com'], 'a removed holder loses access');

-- ---------------------------------------------------------------- what a holder sees
SELECT pg_temp.as_holder('ann@example.com');
SELECT set_eq('SELECT policy_uid FROM insurance.risk_items', ARRAY['rls-a', 'rls-b'],
              'a holder sees exactly the items with a claimant row');
SELECT set_eq('SELECT email FROM insurance.beneficiaries', ARRAY['ann@example.com', 'kid2@example.com', 'ann@example.com'],
              'and only the beneficiaries of those items');
SELECT set_eq('SELECT risk_item_id FROM insurance.authorized_claimants',
              ARRAY[pg_temp.item('rls-a'), pg_temp.item('rls-b')], 'and only their own claimant rows');
SELECT is(pg_temp.rows_changed(format($$UPDATE insurance.risk_items SET insured_subject = '{"phone": "2"}'
                                        WHERE id = %s$$, pg_temp.item('rls-c'))), 0,
          'an UPDATE of another holder''s item changes zero rows');
SELECT is(pg_temp.rows_changed(format($$DELETE FROM insurance.beneficiaries WHERE risk_item_id = %s$$,
                                      pg_temp.item('rls-c'))), 0,
          'a DELETE of another holder''s beneficiaries changes zero rows');
SELECT is(pg_temp.rows_changed(format($$DELETE FROM insurance.beneficiaries WHERE risk_item_id = %s AND is_holder$$,
                                      pg_temp.item('rls-b'))), 0,
          'the holder row cannot be deleted, even on one''s own item');
SELECT throws_ok(format($$INSERT INTO insurance.beneficiaries (risk_item_id, name) VALUES (%s, 'X')$$,
                        pg_temp.item('rls-c')), '42501', NULL, 'no beneficiary on another holder''s item');
SELECT throws_ok(format($$INSERT INTO insurance.beneficiaries (risk_item_id, name, email, is_holder)
                          VALUES (%s, 'X', 'x@example.com', true)$$, pg_temp.item('rls-a')), '42501', NULL,
                 'a holder cannot make a new holder');
SELECT is(pg_temp.rows_changed(format($$UPDATE insurance.risk_items SET insured_subject = '{"phone": "3"}'
                                        WHERE id = %s$$, pg_temp.item('rls-a'))), 1,
          'an UPDATE of one''s own item changes it');
SELECT pg_temp.as_holder(NULL);
SELECT is_empty('SELECT id FROM insurance.risk_items', 'no e-mail claim: nothing visible');
SELECT pg_temp.as_operator();
SELECT is((SELECT insured_subject FROM insurance.risk_items WHERE policy_uid = 'rls-c'), '{"phone": "1"}'::jsonb,
          'the other holder''s item is unchanged');

SELECT * FROM finish();
ROLLBACK;
