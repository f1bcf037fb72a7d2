-- Revert insurance:dashboard_sync from pg
BEGIN;
SET LOCAL ROLE insurance_owner;
DROP FUNCTION dashboard.risk_item_emissions(bigint, uuid);
DROP FUNCTION dashboard.begin_beneficiaries_sync(bigint, uuid, text, integer);
COMMIT;
