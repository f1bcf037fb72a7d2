-- At most 50 beneficiaries per risk item, a rule of the beneficiaries table (its trigger), so
-- that the holder's additions and the gateway's creation are capped alike: PT422
-- BENEFICIARY_LIMIT, counted over every row whatever the caller may see.
BEGIN;
\ir helpers/common.psql
SELECT plan(6);

INSERT INTO insurance.packages (uid, name) VALUES ('pgtap-benef', 'Beneficiaries');
INSERT INTO insurance.package_variants (package_id, code, name)
SELECT id, 'travel', 'Travel' FROM insurance.packages WHERE uid = 'pgtap-benef';
INSERT INTO insurance.risk_items (package_id, policy_uid, variant)
SELECT id, p, 'travel' FROM insurance.packages, (VALUES ('benef-1'), ('benef-2')) v(p) WHERE uid = 'pgtap-benef';
CREATE TEMP TABLE _items AS SELECT id, policy_uid FROM insurance.risk_items WHERE policy_uid IN ('benef-1', 'benef-2');

SELECT lives_ok($$INSERT INTO insurance.beneficiaries (risk_item_id, name)
                  SELECT id, 'B' || n FROM _items, generate_series(1, 50) n WHERE policy_uid = 'benef-1'$$,
                'fifty beneficiaries in one statement');
SELECT throws_ok($$INSERT INTO insurance.beneficiaries (risk_item_id, name) SELECT id, 'B51' FROM _items WHERE policy_uid = 'benef-1'$$,
                 'PT422', 'a risk item holds at most 50 beneficiaries', 'a 51st is refused');
SELECT throws_ok($$INSERT INTO insurance.beneficiaries (risk_item_id, name)
                   SELECT id, 'C' || n FROM _items, generate_series(1, 51) n WHERE policy_uid = 'benef-2'$$,
                 'PT422', 'a risk item holds at most 50 beneficiaries', 'fifty-one in one statement are refused');
-- Moving a beneficiary onto a full item is refused too.
INSERT INTO insurance.beneficiaries (risk_item_id, name) SELECT id, 'Mover' FROM _items WHERE policy_uid = 'benef-2';
SELECT throws_ok($$UPDATE insurance.beneficiaries SET risk_item_id = (SELECT id FROM _items WHERE policy_uid = 'benef-1')
                    WHERE name = 'Mover'$$,
                 'PT422', 'a risk item holds at most 50 beneficiaries', 'moving a 51st onto a full item is refused');
DELETE FROM insurance.beneficiaries WHERE name = 'Mover';
SELECT is((SELECT count(*)::int FROM insurance.beneficiaries b JOIN _items i ON i.id = b.risk_item_id
            WHERE i.policy_uid = 'benef-2'), 0, 'and leave nothing behind');
SELECT is((SELECT count(*)::int FROM insurance.beneficiaries b JOIN _items i ON i.id = b.risk_item_id
            WHERE i.policy_uid = 'benef-1'), 50, 'the item keeps its fifty');

SELECT * FROM finish();
ROLLBACK;
