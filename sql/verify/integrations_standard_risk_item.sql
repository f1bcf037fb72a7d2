-- Verify insurance:integrations_standard_risk_item on pg
SELECT 'integrations.standard_risk_items(bigint[])'::regprocedure,
       'integrations.standard_risk_item(bigint)'::regprocedure;
DO $$
BEGIN
  ASSERT has_function_privilege('insurance_service', 'integrations.standard_risk_items(bigint[])', 'EXECUTE'), 'insurance_service cannot call integrations.standard_risk_items';
  ASSERT has_function_privilege('insurance_app', 'integrations.standard_risk_item(bigint)', 'EXECUTE'), 'insurance_app cannot call integrations.standard_risk_item';
  ASSERT has_function_privilege('insurance_service', 'integrations.standard_risk_item(bigint)', 'EXECUTE'), 'insurance_service cannot call integrations.standard_risk_item';
END
$$;
