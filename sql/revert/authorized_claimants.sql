-- Revert insurance:authorized_claimants from pg
BEGIN;
DROP TABLE insurance.authorized_claimants;

COMMIT;
