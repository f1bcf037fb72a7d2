-- Revert insurance:channels from pg
BEGIN;
DROP TABLE insurance.channels;
DROP FUNCTION insurance._bump_key_generation();
COMMIT;
