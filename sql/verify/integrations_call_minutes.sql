-- Verify insurance:integrations_call_minutes on pg
SELECT 'integrations.record_calls(jsonb,jsonb)'::regprocedure, 'integrations._note_calls(jsonb)'::regprocedure;
DO $$
BEGIN
  ASSERT has_function_privilege('insurance_service', 'integrations.record_calls(jsonb,jsonb)', 'EXECUTE'),
         'insurance_service cannot call integrations.record_calls';
END
$$;
