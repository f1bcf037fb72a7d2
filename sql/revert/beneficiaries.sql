-- Revert insurance:beneficiaries from pg
BEGIN;
DROP FUNCTION insurance.beneficiary_json(insurance.beneficiaries);
DROP TABLE insurance.beneficiaries;
DROP FUNCTION insurance.check_beneficiary_shares();
DROP FUNCTION insurance.check_beneficiary_count();
-- From the holder mirror (trigger beneficiaries_mirror_holder_claimants, dropped with the table)
DROP FUNCTION insurance.mirror_holder_claimants();

COMMIT;
