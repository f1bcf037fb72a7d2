-- The holder's list (postsales.my_risk_items) reads its rows through the claimant policies alone
-- (risk_items_select_holder: the claimant's item ids as one array, the primary key's index
-- condition): the same answer, byte for byte, as the join of authorized_claimants it had, for a
-- holder with items, one without, no e-mail claim, and an operator; and the plan reads the
-- items by their primary key, with no hashed subplan.
BEGIN;
\ir helpers/common.psql
\ir helpers/holder.psql
SELECT plan(7);

-- the_list(email): the answer as my_risk_items wrote it before, the claimants joined (run as the owner).
CREATE FUNCTION pg_temp.the_list(_email text) RETURNS text LANGUAGE sql SECURITY DEFINER AS $$
  SELECT coalesce(json_agg(json_build_object(
           'id', ri.id, 'uid', ri.uid, 'policy_uid', ri.policy_uid, 'status', ri.status,
           'variant', ri.variant, 'insured_subject', ri.insured_subject,
           'package', json_build_object('uid', p.uid, 'name', p.name),
           'created_at', ri.created_at, 'updated_at', ri.updated_at) ORDER BY ri.id DESC), '[]')::text
    FROM insurance.authorized_claimants ac
    JOIN insurance.risk_items ri ON ri.id = ac.risk_item_id
    JOIN insurance.packages p ON p.id = ri.package_id
   WHERE ac.email = _email AND ri.status = 'active' $$;

INSERT INTO insurance.packages (uid, name) VALUES ('pgtap-list-a', 'List A'), ('pgtap-list-b', 'List B');
INSERT INTO insurance.package_variants (package_id, code, name)
SELECT id, 'travel', 'Travel' FROM insurance.packages WHERE uid LIKE 'pgtap-list-%';
-- Ann: two active items in two packages, a cancelled one, and a beneficiary's place (not holder) in
-- Bob's second item; Bob: two items. Rows of others around them.
INSERT INTO insurance.risk_items (package_id, policy_uid, variant, insured_subject, status)
SELECT p.id, v.policy, 'travel', jsonb_build_object('name', v.policy, 'note', 'a "quoted" é'), v.status
  FROM (VALUES ('list-a1', 'pgtap-list-a', 'active'), ('list-a2', 'pgtap-list-b', 'active'),
               ('list-a3', 'pgtap-list-a', 'cancelled'), ('list-b1', 'pgtap-list-a', 'active'),
               ('list-b2', 'pgtap-list-b', 'active')) v(policy, package, status)
  JOIN insurance.packages p ON p.uid = v.package;
INSERT INTO insurance.beneficiaries (risk_item_id, name, email, is_holder, share) VALUES
  (pg_temp.item('list-a1'), 'Ann', 'ann.list@example.com', true, 100),
  (pg_temp.item('list-a2'), 'Ann', 'ann.list@example.com', true, 100),
  (pg_temp.item('list-a3'), 'Ann', 'ann.list@example.com', true, 100),
  (pg_temp.item('list-b1'), 'Bob', 'bob.list@example.com', true, 100),
  (pg_temp.item('list-b2'), 'Bob', 'bob.list@example.com', true, 50),
  (pg_temp.item('list-b2'), 'Ann', 'ann.list@example.com', false, 50);

SELECT pg_temp.as_holder('ann.list@example.com');
SELECT is(postsales.my_risk_items()::text, pg_temp.the_list('ann.list@example.com'),
          'a holder''s list: the same bytes as the claimants'' join');
SELECT is((SELECT array_agg(e ->> 'policy_uid') FROM json_array_elements(postsales.my_risk_items()) e),
          ARRAY['list-a2', 'list-a1'], 'her active items, newest first');
SELECT pg_temp.as_holder('bob.list@example.com');
SELECT is(postsales.my_risk_items()::text, pg_temp.the_list('bob.list@example.com'), 'another holder''s: the same');
SELECT pg_temp.as_holder('nobody.list@example.com');
SELECT is(postsales.my_risk_items()::text, '[]', 'an e-mail without items: an empty list');
SELECT pg_temp.act_as('insurance_holder', '{"sub": "x"}');
SELECT is(postsales.my_risk_items()::text, '[]', 'no e-mail claim: an empty list');

-- An operator (no policy holds them) meets the same rule written out.
SELECT pg_temp.as_operator();
SELECT pg_temp.with_claims('{"email": "ann.list@example.com"}');
SELECT is(postsales.my_risk_items()::text, pg_temp.the_list('ann.list@example.com'),
          'an operator with Ann''s claims: Ann''s list, not every item');

-- The plan: the items by their primary key (the policy's array), no hashed subplan.
CREATE TEMP TABLE _plan (line text);
GRANT INSERT, SELECT ON _plan TO insurance_holder;
SET LOCAL enable_seqscan = off;  -- a few rows: the planner would scan them all, whatever the policy
SELECT pg_temp.as_holder('ann.list@example.com');
DO $$
DECLARE _line text;
BEGIN
  FOR _line IN EXPLAIN (COSTS OFF)
    SELECT json_agg(ri.id) FROM insurance.risk_items ri JOIN insurance.packages p ON p.id = ri.package_id
     WHERE ri.status = 'active' LOOP
    INSERT INTO _plan VALUES (_line);
  END LOOP;
END
$$;
SELECT pg_temp.as_operator();
SELECT ok((SELECT bool_or(line ~ 'Index Cond: \(id = ANY') AND NOT bool_or(line ~ 'hashed SubPlan') FROM _plan),
          'the holder''s items are read by primary key, through the policy''s array: '
          || (SELECT string_agg(line, ' / ') FROM _plan));

SELECT * FROM finish();
ROLLBACK;
