-- Revert insurance:rate_limits from pg
BEGIN;
SET LOCAL ROLE insurance_owner;

DROP FUNCTION gateway.validate(integer);
DROP FUNCTION gateway.admit(integer);
DROP TYPE gateway.reply;
DROP TABLE insurance.rate_limits;

COMMIT;
