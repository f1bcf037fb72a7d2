-- Revert insurance:personal_data from pg
BEGIN;
SET LOCAL ROLE insurance_owner;

DROP TABLE insurance.pseudonymized_items;
DROP TABLE insurance.personal_data;
DROP TABLE insurance.retention_rules;

COMMIT;
