-- Revert insurance:gateway_authorize from pg
BEGIN;
DROP FUNCTION gateway.authorize(bytea, text);
COMMIT;
