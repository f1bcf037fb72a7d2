-- Revert insurance:webhooks_events from pg
BEGIN;
SET LOCAL ROLE insurance_owner;

DROP TRIGGER integration_emissions_webhook_update ON insurance.integration_emissions;
DROP TRIGGER integration_emissions_webhook_insert ON insurance.integration_emissions;
DROP FUNCTION webhooks._delivery_json(outbox.http_requests);
DROP FUNCTION webhooks.signing_salts(uuid,integer);
DROP FUNCTION webhooks._emission_event();
DROP FUNCTION webhooks._endpoints(jsonb,text);

COMMIT;
