-- Revert insurance:integrations_pause from pg
BEGIN;
SET LOCAL ROLE insurance_owner;

DROP FUNCTION integrations.paused_providers();
DROP FUNCTION integrations.resume_provider(text);
DROP FUNCTION integrations.pause_provider(text, timestamptz);

COMMIT;
