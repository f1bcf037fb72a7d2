-- Revert insurance:outbox_call_minutes from pg
BEGIN;
SET LOCAL ROLE insurance_owner;

DROP FUNCTION outbox.record_timed_deliveries(text, jsonb, integer);

COMMIT;
