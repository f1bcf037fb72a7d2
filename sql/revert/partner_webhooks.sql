-- Revert insurance:partner_webhooks from pg
BEGIN;
SET LOCAL ROLE insurance_owner;

DROP FUNCTION gateway.redeliver_webhook(integer, bigint);
DROP FUNCTION gateway.page_webhook_deliveries(integer, integer, bigint);
DROP FUNCTION gateway.list_webhook_deliveries(integer, integer, integer);
DROP FUNCTION admin.set_webhook_secret(text, uuid, bytea);
DROP TRIGGER integration_emissions_webhook_update ON insurance.integration_emissions;
DROP TRIGGER integration_emissions_webhook_insert ON insurance.integration_emissions;
DROP FUNCTION webhooks._emission_event();
DROP FUNCTION webhooks._delivery_json(outbox.http_requests);
DROP FUNCTION webhooks.signing_salts(uuid, integer);
DROP FUNCTION webhooks._endpoints(jsonb, text);
DROP TABLE webhooks.secrets;
DROP SCHEMA webhooks;

COMMIT;
