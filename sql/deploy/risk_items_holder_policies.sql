-- Deploy insurance:risk_items_holder_policies to pg
-- The holder's policies on risk_items: they read authorized_claimants, which references risk_items and so comes after it (CONTRIBUTING, "SQL": the one exception to a policy's home)
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

CREATE POLICY risk_items_select_holder ON insurance.risk_items
  FOR SELECT TO insurance_holder
  USING (id IN (SELECT ac.risk_item_id FROM insurance.authorized_claimants ac
                 WHERE ac.email = (SELECT insurance.claim('email'))));

-- UPDATE policies without WITH CHECK apply USING to the new row as well.
CREATE POLICY risk_items_update_holder ON insurance.risk_items
  FOR UPDATE TO insurance_holder
  USING (id IN (SELECT ac.risk_item_id FROM insurance.authorized_claimants ac
                 WHERE ac.email = (SELECT insurance.claim('email'))));

COMMIT;
