-- Verify insurance:integrations_emission_state_machine on pg
SELECT 'integrations.retry_pending(bigint)'::regprocedure,
       'integrations.retry_delay(integer,numeric,numeric,numeric)'::regprocedure,
       'integrations._clean_text(text,integer)'::regprocedure,
       'integrations._record_outcomes(jsonb,jsonb)'::regprocedure,
       'integrations.record_emission(bigint,text,text,jsonb,jsonb)'::regprocedure,
       'integrations.record_batch(jsonb,jsonb)'::regprocedure,
       'integrations.retry_from_backoffice(bigint[])'::regprocedure;
DO $$
BEGIN
  ASSERT has_function_privilege('insurance_service', 'integrations.retry_delay(integer,numeric,numeric,numeric)', 'EXECUTE'), 'insurance_service cannot call integrations.retry_delay';
  ASSERT has_function_privilege('insurance_service', 'integrations._clean_text(text,integer)', 'EXECUTE'), 'insurance_service cannot call integrations._clean_text';
  ASSERT has_function_privilege('insurance_service', 'integrations._record_outcomes(jsonb,jsonb)', 'EXECUTE'), 'insurance_service cannot call integrations._record_outcomes';
  ASSERT has_function_privilege('insurance_service', 'integrations.record_emission(bigint,text,text,jsonb,jsonb)', 'EXECUTE'), 'insurance_service cannot call integrations.record_emission';
  ASSERT has_function_privilege('insurance_app', 'integrations.record_batch(jsonb,jsonb)', 'EXECUTE'), 'insurance_app cannot call integrations.record_batch';
  ASSERT has_function_privilege('insurance_service', 'integrations.record_batch(jsonb,jsonb)', 'EXECUTE'), 'insurance_service cannot call integrations.record_batch';
END
$$;
