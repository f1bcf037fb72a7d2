-- Holder entry points (postsales_risk_items): list, read, the PATCH allow-list, beneficiaries
-- within post-sales scope and the sum of shares, all as insurance_holder under RLS.
BEGIN;
\ir helpers/common.psql
\ir helpers/holder.psql
SELECT plan(18);
-- item_uid(policy): a uid by policy uid, even of an item the current role may not see.
CREATE FUNCTION pg_temp.item_uid(policy text) RETURNS uuid LANGUAGE sql SECURITY DEFINER AS $$
  SELECT uid FROM insurance.risk_items WHERE policy_uid = policy $$;


INSERT INTO insurance.packages (uid, name) VALUES ('pgtap-holder', 'Holder package');
INSERT INTO insurance.package_variants (package_id, code, name, premium)
SELECT id, v, initcap(v), 10 FROM insurance.packages, unnest(ARRAY['travel', 'home']) v WHERE uid = 'pgtap-holder';
INSERT INTO insurance.risk_items (package_id, policy_uid, variant, insured_subject)
SELECT id, p, 'travel', '{"name": "Ann", "phone": "+34 600"}' FROM insurance.packages,
       unnest(ARRAY['hold-a', 'hold-b']) p WHERE uid = 'pgtap-holder';
INSERT INTO insurance.beneficiaries (risk_item_id, name, email, is_holder, share) VALUES
  (pg_temp.item('hold-a'), 'Ann', 'ann.h@example.com', true, 60),
  (pg_temp.item('hold-b'), 'Bob', 'bob.h@example.com', true, 100);
-- A cancelled item of Ann's: she still reaches it by id, but her list shows active items only.
INSERT INTO insurance.risk_items (package_id, policy_uid, variant, insured_subject, status)
SELECT id, 'hold-c', 'travel', '{"name": "Ann"}', 'cancelled' FROM insurance.packages WHERE uid = 'pgtap-holder';
INSERT INTO insurance.beneficiaries (risk_item_id, name, email, is_holder, share) VALUES
  (pg_temp.item('hold-c'), 'Ann', 'ann.h@example.com', true, 100);

SELECT pg_temp.as_holder('ann.h@example.com');
SELECT is((SELECT array_agg(e ->> 'policy_uid') FROM json_array_elements(postsales.my_risk_items()) e),
          ARRAY['hold-a'], 'my_risk_items lists only the caller''s active items');
SELECT is(postsales.risk_item(pg_temp.item('hold-c'), NULL) ->> 'status', 'cancelled',
          'a cancelled item is still the holder''s to read');
SELECT is(postsales.risk_item(NULL, pg_temp.item_uid('hold-a')) ->> 'policy_uid',
          'hold-a', 'an item is named by its uid as well as by its id');
SELECT throws_ok(format('SELECT postsales.risk_item(%s, %L)', pg_temp.item('hold-a'),
                        pg_temp.item_uid('hold-c')),
                 'PT401', 'access denied', 'an id and a uid of two items name nothing');
SELECT is(postsales.risk_item_beneficiaries(pg_temp.item('hold-a'), NULL) -> 0 -> 'isHolder', 'true'::jsonb,
          'beneficiaries say isHolder, as the specification does');
SELECT throws_ok(format('SELECT postsales.risk_item(NULL, %L)', pg_temp.item_uid('hold-b')),
                 'PT401', 'access denied', 'another holder''s item by uid: 401 access denied');
SELECT is(postsales.risk_item(pg_temp.item('hold-a'), NULL) -> 'beneficiaries' -> 0 ->> 'email', 'ann.h@example.com',
          'risk_item answers the item with its beneficiaries');
SELECT throws_ok(format('SELECT postsales.risk_item(%s, NULL)', pg_temp.item('hold-b')), 'PT401', 'access denied',
                 'another holder''s item: 401 access denied');
SELECT throws_ok(format('SELECT postsales.risk_item_variants(%s, NULL)', pg_temp.item('hold-b')), 'PT401', 'access denied',
                 'and no variants of it');
SELECT is(jsonb_array_length(postsales.risk_item_variants(pg_temp.item('hold-a'), NULL)), 2,
          'the variants of the item''s package');

SELECT is(postsales.update_risk_item(pg_temp.item('hold-a'), NULL, '{"insured_subject": {"phone": "+34 611"}}')
            -> 'insured_subject', '{"name": "Ann", "phone": "+34 611"}', 'contact data merges into the subject');
SELECT throws_ok(format($$SELECT postsales.update_risk_item(%s, NULL, '{"insured_subject": {"name": "Eve"}, "status": "x"}')$$,
                        pg_temp.item('hold-a')), 'PT422', NULL, 'a field outside the allow-list is 422');
SELECT throws_ok(format($$SELECT postsales.update_risk_item(%s, NULL, '{"insured_subject": {"phone": "+34 699"}}')$$,
                        pg_temp.item('hold-b')), 'PT401', 'access denied', 'no PATCH of another holder''s item');

SELECT throws_ok(format($$SELECT postsales.add_beneficiary(%s, NULL, '{"name": "Kid", "share": 41}')$$,
                        pg_temp.item('hold-a')), 'PT422', 'the shares of a risk item add up to at most 100',
                 'shares above 100 in total are refused');
SELECT is(postsales.add_beneficiary(pg_temp.item('hold-a'), NULL, '{"name": "Kid", "share": 40}') ->> 'share', '40.00',
          'shares up to 100 are accepted');
SELECT throws_ok(format($$SELECT postsales.add_beneficiary(%s, NULL, '{"name": "Kid", "is_holder": true}')$$,
                        pg_temp.item('hold-a')), 'PT422', NULL, 'is_holder is not the holder''s to set');
SELECT throws_ok(format($$SELECT postsales.remove_beneficiary(%s, NULL, b.id) FROM insurance.beneficiaries b
                          WHERE b.email = 'ann.h@example.com'$$, pg_temp.item('hold-a')),
                 'PT422', 'the holder cannot be removed', 'the holder cannot be removed');
SELECT pg_temp.as_operator();
SELECT is((SELECT insured_subject FROM insurance.risk_items WHERE policy_uid = 'hold-a'),
          '{"name": "Ann", "phone": "+34 611"}'::jsonb, 'the refused PATCH changed nothing');

SELECT * FROM finish();
ROLLBACK;
