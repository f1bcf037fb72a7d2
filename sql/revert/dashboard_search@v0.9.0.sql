-- Revert insurance:dashboard_search from pg
BEGIN;
SET LOCAL ROLE insurance_owner;

DROP FUNCTION dashboard.search(text);

COMMIT;
