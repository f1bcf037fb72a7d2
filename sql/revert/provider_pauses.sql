-- Revert insurance:provider_pauses from pg
BEGIN;
SET LOCAL ROLE insurance_owner;

DROP TABLE insurance.provider_pauses;

COMMIT;
