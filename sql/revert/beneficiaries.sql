-- Revert insurance:beneficiaries from pg
BEGIN;
DROP TABLE insurance.beneficiaries;
COMMIT;
