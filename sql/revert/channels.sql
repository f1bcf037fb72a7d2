-- Revert insurance:channels from pg
BEGIN;
DROP TABLE insurance.channels;
COMMIT;
