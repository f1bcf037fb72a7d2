-- Verify insurance:integration_emissions on pg
SELECT id, risk_item_id, provider, event, status, external_id, response, error_history,
       next_retry_at, attempts, created_at, updated_at
  FROM insurance.integration_emissions WHERE false;
SELECT 'insurance.integration_emissions_due_idx'::regclass,
       'insurance.integration_emissions_status_id_idx'::regclass,
       'insurance.integration_emissions_event_id_idx'::regclass,
       'insurance.integration_emissions_external_id_idx'::regclass;
DO $$
BEGIN
  ASSERT EXISTS (SELECT FROM pg_catalog.pg_trigger WHERE tgname = 'integration_emissions_touch_updated_at' AND tgrelid = 'insurance.integration_emissions'::regclass), 'trigger integration_emissions_touch_updated_at missing';
  ASSERT EXISTS (SELECT FROM pg_catalog.pg_policies WHERE schemaname || '.' || tablename = 'insurance.integration_emissions' AND policyname = 'integration_emissions_select_service'), 'policy integration_emissions_select_service missing';
  ASSERT EXISTS (SELECT FROM pg_catalog.pg_policies WHERE schemaname || '.' || tablename = 'insurance.integration_emissions' AND policyname = 'integration_emissions_insert_service'), 'policy integration_emissions_insert_service missing';
  ASSERT EXISTS (SELECT FROM pg_catalog.pg_policies WHERE schemaname || '.' || tablename = 'insurance.integration_emissions' AND policyname = 'integration_emissions_update_service'), 'policy integration_emissions_update_service missing';
  ASSERT EXISTS (SELECT FROM pg_catalog.pg_policies WHERE schemaname || '.' || tablename = 'insurance.integration_emissions' AND policyname = 'integration_emissions_select_dashboard'), 'policy integration_emissions_select_dashboard missing';
END
$$;
