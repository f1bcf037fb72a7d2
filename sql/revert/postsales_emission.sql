-- Revert insurance:postsales_emission from pg
BEGIN;
SET LOCAL ROLE insurance_owner;
DROP FUNCTION postsales.begin_emission(bigint, uuid, text, integer);
COMMIT;
