-- Verify insurance:integrations_provider_config on pg
SELECT 'integrations.provider_config(text)'::regprocedure, 'integrations.set_provider_config(text, jsonb)'::regprocedure;
DO $$ BEGIN
  ASSERT has_function_privilege('insurance_service', 'integrations.provider_config(text)', 'EXECUTE');
  ASSERT NOT has_function_privilege('insurance_service', 'integrations.set_provider_config(text, jsonb)', 'EXECUTE');
END $$;
