-- Verify insurance:webhooks_events on pg
SELECT 'webhooks._endpoints(jsonb,text)'::regprocedure,
       'webhooks._emission_event()'::regprocedure,
       'webhooks.signing_salts(uuid,integer)'::regprocedure,
       'webhooks._delivery_json(outbox.http_requests)'::regprocedure;
DO $$
BEGIN
  ASSERT EXISTS (SELECT FROM pg_catalog.pg_trigger WHERE tgname = 'integration_emissions_webhook_insert' AND tgrelid = 'insurance.integration_emissions'::regclass), 'trigger integration_emissions_webhook_insert missing';
  ASSERT EXISTS (SELECT FROM pg_catalog.pg_trigger WHERE tgname = 'integration_emissions_webhook_update' AND tgrelid = 'insurance.integration_emissions'::regclass), 'trigger integration_emissions_webhook_update missing';
  ASSERT has_function_privilege('insurance_app', 'webhooks.signing_salts(uuid,integer)', 'EXECUTE'), 'insurance_app cannot call webhooks.signing_salts';
  ASSERT has_function_privilege('insurance_service', 'webhooks.signing_salts(uuid,integer)', 'EXECUTE'), 'insurance_service cannot call webhooks.signing_salts';
END
$$;
