-- Verify insurance:dashboard_packages on pg
SELECT 'dashboard.list_packages()'::regprocedure;
DO $$
BEGIN
  ASSERT has_function_privilege('insurance_app', 'dashboard.list_packages()', 'EXECUTE'), 'insurance_app cannot call dashboard.list_packages';
  ASSERT has_function_privilege('insurance_dashboard', 'dashboard.list_packages()', 'EXECUTE'), 'insurance_dashboard cannot call dashboard.list_packages';
END
$$;
