-- Revert insurance:gateway_auth from pg
BEGIN;
SET LOCAL ROLE insurance_owner;

DROP FUNCTION gateway.token_channel(integer);
DROP FUNCTION gateway.admit(integer);
DROP FUNCTION gateway.authorize(bytea,text);
DROP TYPE gateway.reply;

COMMIT;
