-- Verify insurance:dashboard_access on pg
DO $$
BEGIN
  ASSERT EXISTS (SELECT FROM pg_catalog.pg_policies WHERE schemaname = 'insurance'
                  AND policyname = 'integration_emissions_select_dashboard');
  ASSERT has_function_privilege('insurance_dashboard', 'dashboard.emissions_by_risk_item(bigint)', 'EXECUTE');
  ASSERT has_function_privilege('insurance_app',
    'dashboard.list_emissions(text[], text, text, timestamptz, timestamptz, bigint, integer)', 'EXECUTE');
  ASSERT has_function_privilege('insurance_dashboard', 'dashboard.emission_detail(bigint)', 'EXECUTE');
  ASSERT has_function_privilege('insurance_dashboard', 'dashboard.list_outbox(boolean, bigint, integer)', 'EXECUTE');
  ASSERT has_function_privilege('insurance_dashboard', 'dashboard.list_audit(bigint, integer)', 'EXECUTE');
  ASSERT has_function_privilege('insurance_app', 'dashboard.retry_emissions(bigint[], text)', 'EXECUTE');
  ASSERT has_function_privilege('insurance_app', 'dashboard.retry_outbox(bigint[])', 'EXECUTE');
  ASSERT NOT has_function_privilege('insurance_holder', 'dashboard.retry_emissions(bigint[], text)', 'EXECUTE');
END
$$;
