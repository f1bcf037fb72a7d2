-- Revert insurance:beneficiaries from pg
BEGIN;
DROP FUNCTION insurance.beneficiary_json(insurance.beneficiaries);
DROP TABLE insurance.beneficiaries;
DROP FUNCTION insurance.check_beneficiary_shares();
COMMIT;
