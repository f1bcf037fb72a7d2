-- Revert insurance:emission_claims from pg
BEGIN;
SET LOCAL ROLE insurance_owner;

DROP TABLE insurance.emission_claims;

COMMIT;
