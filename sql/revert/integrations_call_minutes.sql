-- Revert insurance:integrations_call_minutes from pg
BEGIN;
SET LOCAL ROLE insurance_owner;

DROP FUNCTION integrations.record_calls(jsonb, jsonb);
DROP FUNCTION integrations._note_calls(jsonb);

COMMIT;
