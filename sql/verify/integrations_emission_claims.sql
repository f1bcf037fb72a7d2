-- Verify insurance:integrations_emission_claims on pg
SELECT 'integrations.emission_json(insurance.integration_emissions)'::regprocedure,
       'integrations.begin_batch(jsonb,text,integer)'::regprocedure,
       'integrations._begin_one(jsonb,text,integer)'::regprocedure,
       'integrations.begin_emission(bigint,text,text,text,integer)'::regprocedure,
       'integrations.begin_order_emission(bigint,text,integer)'::regprocedure,
       'integrations.begin_emission_retry(bigint,text,integer)'::regprocedure,
       'integrations.begin_post_sales_emission(bigint,text,integer)'::regprocedure;
DO $$
BEGIN
  ASSERT has_function_privilege('insurance_dashboard', 'integrations.emission_json(insurance.integration_emissions)', 'EXECUTE'), 'insurance_dashboard cannot call integrations.emission_json';
  ASSERT has_function_privilege('insurance_service', 'integrations.emission_json(insurance.integration_emissions)', 'EXECUTE'), 'insurance_service cannot call integrations.emission_json';
  ASSERT has_function_privilege('insurance_app', 'integrations.begin_batch(jsonb,text,integer)', 'EXECUTE'), 'insurance_app cannot call integrations.begin_batch';
  ASSERT has_function_privilege('insurance_service', 'integrations.begin_batch(jsonb,text,integer)', 'EXECUTE'), 'insurance_service cannot call integrations.begin_batch';
  ASSERT has_function_privilege('insurance_service', 'integrations._begin_one(jsonb,text,integer)', 'EXECUTE'), 'insurance_service cannot call integrations._begin_one';
  ASSERT has_function_privilege('insurance_app', 'integrations.begin_emission(bigint,text,text,text,integer)', 'EXECUTE'), 'insurance_app cannot call integrations.begin_emission';
  ASSERT has_function_privilege('insurance_service', 'integrations.begin_emission(bigint,text,text,text,integer)', 'EXECUTE'), 'insurance_service cannot call integrations.begin_emission';
  ASSERT has_function_privilege('insurance_app', 'integrations.begin_order_emission(bigint,text,integer)', 'EXECUTE'), 'insurance_app cannot call integrations.begin_order_emission';
  ASSERT has_function_privilege('insurance_service', 'integrations.begin_order_emission(bigint,text,integer)', 'EXECUTE'), 'insurance_service cannot call integrations.begin_order_emission';
  ASSERT has_function_privilege('insurance_app', 'integrations.begin_emission_retry(bigint,text,integer)', 'EXECUTE'), 'insurance_app cannot call integrations.begin_emission_retry';
  ASSERT has_function_privilege('insurance_service', 'integrations.begin_emission_retry(bigint,text,integer)', 'EXECUTE'), 'insurance_service cannot call integrations.begin_emission_retry';
  ASSERT has_function_privilege('insurance_app', 'integrations.begin_post_sales_emission(bigint,text,integer)', 'EXECUTE'), 'insurance_app cannot call integrations.begin_post_sales_emission';
  ASSERT has_function_privilege('insurance_holder', 'integrations.begin_post_sales_emission(bigint,text,integer)', 'EXECUTE'), 'insurance_holder cannot call integrations.begin_post_sales_emission';
END
$$;
