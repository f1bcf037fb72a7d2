-- Verify insurance:dashboard_access on pg
DO $$
BEGIN
  ASSERT EXISTS (SELECT FROM pg_catalog.pg_policies WHERE schemaname = 'insurance'
                  AND policyname = 'integration_emissions_select_dashboard');
  ASSERT EXISTS (SELECT FROM pg_catalog.pg_policies WHERE schemaname = 'insurance'
                  AND policyname = 'risk_items_select_dashboard');
  ASSERT has_function_privilege('insurance_dashboard', 'dashboard.emissions_by_risk_item(bigint)', 'EXECUTE');
  ASSERT has_function_privilege('insurance_app',
    'dashboard.list_emissions(text[], text, timestamptz, timestamptz, bigint, integer)', 'EXECUTE');
  ASSERT has_function_privilege('insurance_dashboard', 'dashboard.post_sales_target(bigint)', 'EXECUTE');
END
$$;
