-- Revert insurance:risk_items_holder_policies from pg
BEGIN;
SET LOCAL ROLE insurance_owner;

DROP POLICY risk_items_update_holder ON insurance.risk_items;
DROP POLICY risk_items_select_holder ON insurance.risk_items;

COMMIT;
