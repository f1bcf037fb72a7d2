-- Verify insurance:partner_webhooks on pg
SELECT channel_id, salt, previous_salt, rotated_at, created_at FROM webhooks.secrets WHERE false;
DO $$
BEGIN
  ASSERT has_function_privilege('insurance_service', 'webhooks.signing_salts(uuid, integer)', 'EXECUTE');
  ASSERT NOT has_function_privilege('insurance_channel', 'webhooks.signing_salts(uuid, integer)', 'EXECUTE');
  ASSERT has_function_privilege('insurance_channel', 'gateway.list_webhook_deliveries(integer, integer, integer)', 'EXECUTE');
  ASSERT has_function_privilege('insurance_channel', 'gateway.page_webhook_deliveries(integer, integer, bigint)', 'EXECUTE');
  ASSERT has_function_privilege('insurance_channel', 'gateway.redeliver_webhook(integer, bigint)', 'EXECUTE');
  ASSERT NOT has_function_privilege('insurance_app', 'admin.set_webhook_secret(text, uuid, bytea)', 'EXECUTE');
  ASSERT NOT has_table_privilege('insurance_service', 'webhooks.secrets', 'SELECT');
  ASSERT (SELECT count(*) FROM pg_catalog.pg_trigger t
           WHERE t.tgrelid = 'insurance.integration_emissions'::regclass
             AND t.tgname IN ('integration_emissions_webhook_insert', 'integration_emissions_webhook_update')) = 2;
  PERFORM 'webhooks._emission_event()'::regprocedure, 'webhooks._endpoints(jsonb, text)'::regprocedure,
          'webhooks._delivery_json(outbox.http_requests)'::regprocedure;
END
$$;
