-- Revert insurance:rate_limits from pg
BEGIN;
SET LOCAL ROLE insurance_owner;

DROP TABLE insurance.rate_limits;

COMMIT;
