-- Verify insurance:emission_state_machine on pg
SELECT 'integrations.retry_pending(bigint)'::regprocedure,
       'integrations.retry_delay(integer, numeric, numeric, numeric)'::regprocedure,
       'integrations._clean_text(text, integer)'::regprocedure,
       'integrations.record_emission(bigint, text, text, jsonb, jsonb)'::regprocedure,
       'integrations.record_batch(jsonb, jsonb)'::regprocedure,
       'integrations._record_outcomes(jsonb, jsonb)'::regprocedure,
       'integrations.retry_from_backoffice(bigint[])'::regprocedure;
DO $$
BEGIN
  ASSERT has_function_privilege('insurance_service', 'integrations.retry_delay(integer, numeric, numeric, numeric)', 'EXECUTE'), 'insurance_service cannot call integrations.retry_delay';
  ASSERT has_function_privilege('insurance_service', 'integrations._clean_text(text, integer)', 'EXECUTE'), 'insurance_service cannot call integrations._clean_text';
  ASSERT has_function_privilege('insurance_service', 'integrations.record_emission(bigint, text, text, jsonb, jsonb)', 'EXECUTE'), 'insurance_service cannot call integrations.record_emission';
  ASSERT has_function_privilege('insurance_service', 'integrations.record_batch(jsonb, jsonb)', 'EXECUTE'), 'insurance_service cannot call integrations.record_batch';
  ASSERT (SELECT count(*) FROM pg_policies WHERE policyname IN ('integration_emissions_insert_service', 'integration_emissions_update_service', 'risk_items_update_service')) = 3, 'a policy is missing';
END
$$;
