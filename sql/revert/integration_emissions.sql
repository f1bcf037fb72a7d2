-- Revert insurance:integration_emissions from pg
BEGIN;
DROP TABLE insurance.integration_emissions;

COMMIT;
