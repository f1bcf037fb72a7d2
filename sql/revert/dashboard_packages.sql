-- Revert insurance:dashboard_packages from pg
BEGIN;
SET LOCAL ROLE insurance_owner;

DROP FUNCTION dashboard.list_packages();

COMMIT;
