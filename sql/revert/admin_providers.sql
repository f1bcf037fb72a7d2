-- Revert insurance:admin_providers from pg
BEGIN;
SET LOCAL ROLE insurance_owner;

DROP FUNCTION admin.list_provider_pauses();
DROP FUNCTION admin.resume_provider(text, text);
DROP FUNCTION admin.pause_provider(text, text, timestamptz);

COMMIT;
