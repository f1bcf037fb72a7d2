-- Revert insurance:dashboard from pg
BEGIN;
SET LOCAL ROLE insurance_owner;

DROP FUNCTION dashboard._actor();

COMMIT;
