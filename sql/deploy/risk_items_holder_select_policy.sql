-- Deploy insurance:risk_items_holder_select_policy to pg
-- A holder's items: the claimant's item ids as one array, computed once per statement (an
-- InitPlan), that the primary key index reads (`id = ANY (...)`), instead of an IN subquery that
-- every statement turned into a hashed subplan (a hash table built, then probed per row).
-- Same rows: an e-mail without items, or no e-mail claim, gives an empty array and no row.
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

-- lock_timeout bounds the wait behind requests.
-- ACCESS EXCLUSIVE on risk_items: ALTER POLICY changes a catalog row only (no scan, no rewrite), held for a moment
ALTER POLICY risk_items_select_holder ON insurance.risk_items
  USING (id = ANY (ARRAY(SELECT ac.risk_item_id FROM insurance.authorized_claimants ac
                          WHERE ac.email = (SELECT insurance.claim('email')))));

COMMIT;
