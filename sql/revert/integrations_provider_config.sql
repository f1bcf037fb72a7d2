-- Revert insurance:integrations_provider_config from pg
BEGIN;
DROP FUNCTION integrations.set_provider_config(text, jsonb);
DROP FUNCTION integrations.provider_config(text);
COMMIT;
