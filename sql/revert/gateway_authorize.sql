-- Revert insurance:gateway_authorize from pg
BEGIN;
SET LOCAL ROLE insurance_owner;

DROP FUNCTION gateway.authorize(bytea, text);

COMMIT;
