-- Revert insurance:channel_key_generation from pg
BEGIN;
SET LOCAL ROLE insurance_owner;
DROP TRIGGER channels_key_generation ON insurance.channels;
DROP FUNCTION insurance._bump_key_generation();
ALTER TABLE insurance.channels DROP COLUMN key_generation;
COMMIT;
