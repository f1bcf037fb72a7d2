-- Revert insurance:risk_items_holder_select_policy from pg
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

-- ALTER POLICY takes ACCESS EXCLUSIVE on insurance.risk_items: a catalog row only, for an instant.
ALTER POLICY risk_items_select_holder ON insurance.risk_items
  USING (id IN (SELECT ac.risk_item_id FROM insurance.authorized_claimants ac
                 WHERE ac.email = (SELECT insurance.claim('email'))));

COMMIT;
