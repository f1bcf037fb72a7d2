-- Revert insurance:orders from pg
BEGIN;
DROP TABLE insurance.orders;

COMMIT;
