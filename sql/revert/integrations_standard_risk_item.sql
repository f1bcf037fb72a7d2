-- Revert insurance:integrations_standard_risk_item from pg
BEGIN;
SET LOCAL ROLE insurance_owner;

DROP FUNCTION integrations.standard_risk_item(bigint);
DROP FUNCTION integrations.standard_risk_items(bigint[]);

COMMIT;
