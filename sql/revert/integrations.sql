-- Revert insurance:integrations from pg
BEGIN;
DROP TABLE insurance.integrations;
COMMIT;
