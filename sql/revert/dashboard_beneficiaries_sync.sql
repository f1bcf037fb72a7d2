-- Revert insurance:dashboard_beneficiaries_sync from pg
BEGIN;
SET LOCAL ROLE insurance_owner;

DROP FUNCTION dashboard.begin_beneficiaries_sync(bigint,uuid,text,integer);

COMMIT;
