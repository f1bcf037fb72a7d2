-- Verify insurance:emission_state_machine on pg
DO $$
BEGIN
  ASSERT has_function_privilege('insurance_service', 'integrations.record_emission(bigint, text, text, jsonb, jsonb)', 'EXECUTE');
  ASSERT has_function_privilege('insurance_service', 'integrations.record_batch(jsonb, jsonb)', 'EXECUTE');
  ASSERT has_function_privilege('insurance_dashboard', 'integrations.retry_from_backoffice(bigint[])', 'EXECUTE');
  ASSERT has_function_privilege('insurance_app', 'integrations.retry_from_backoffice(bigint[])', 'EXECUTE');
  ASSERT EXISTS (SELECT FROM pg_catalog.pg_policies WHERE policyname = 'risk_items_update_service');
END
$$;
DO $$
BEGIN
  ASSERT integrations._clean_text(E'a\x01b\x1fc', 10) = 'abc';
  ASSERT integrations.retry_delay(1, 1, 2, 1e13) <= interval '2 seconds';
  ASSERT pg_catalog.pg_get_functiondef('integrations.retry_from_backoffice(bigint[])'::regprocedure) LIKE '%require_role%';
END
$$;
