-- Revert insurance:webhook_secrets from pg
BEGIN;
SET LOCAL ROLE insurance_owner;

DROP TABLE webhooks.secrets;

COMMIT;
