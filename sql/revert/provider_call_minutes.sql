-- Revert insurance:provider_call_minutes from pg
BEGIN;
SET LOCAL ROLE insurance_owner;

DROP TABLE insurance.provider_call_minutes;
DROP FUNCTION insurance.provider_call_buckets();

COMMIT;
