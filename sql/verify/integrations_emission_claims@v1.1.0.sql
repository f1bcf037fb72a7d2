-- Verify insurance:integrations_emission_claims on pg
SELECT 'integrations.emission_json(insurance.integration_emissions)'::regprocedure,
       'integrations.begin_batch(jsonb,text,integer)'::regprocedure,
       'integrations._begin_one(jsonb,text,integer)'::regprocedure;
DO $$
BEGIN
  ASSERT has_function_privilege('insurance_dashboard', 'integrations.emission_json(insurance.integration_emissions)', 'EXECUTE'), 'insurance_dashboard cannot call integrations.emission_json';
  ASSERT has_function_privilege('insurance_service', 'integrations.emission_json(insurance.integration_emissions)', 'EXECUTE'), 'insurance_service cannot call integrations.emission_json';
  ASSERT has_function_privilege('insurance_app', 'integrations.begin_batch(jsonb,text,integer)', 'EXECUTE'), 'insurance_app cannot call integrations.begin_batch';
  ASSERT has_function_privilege('insurance_service', 'integrations.begin_batch(jsonb,text,integer)', 'EXECUTE'), 'insurance_service cannot call integrations.begin_batch';
  ASSERT has_function_privilege('insurance_service', 'integrations._begin_one(jsonb,text,integer)', 'EXECUTE'), 'insurance_service cannot call integrations._begin_one';
END
$$;
DO $$
BEGIN
  ASSERT pg_get_functiondef('integrations.begin_batch(jsonb,text,integer)'::regprocedure) LIKE '%provider_pauses%',
         'begin_batch claims no key of a paused provider';
END
$$;
