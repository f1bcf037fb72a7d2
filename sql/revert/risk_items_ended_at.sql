-- Revert insurance:risk_items_ended_at from pg
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL ROLE insurance_owner;

ALTER TABLE insurance.risk_items DROP COLUMN ended_at;

COMMIT;
