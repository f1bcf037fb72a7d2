-- Revert insurance:dashboard_audit from pg
BEGIN;
SET LOCAL ROLE insurance_owner;

DROP FUNCTION dashboard.list_audit(bigint,integer);

COMMIT;
