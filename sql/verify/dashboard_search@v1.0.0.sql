-- Verify insurance:dashboard_search on pg
SELECT 'dashboard.search(text)'::regprocedure;
DO $$
BEGIN
  ASSERT has_function_privilege('insurance_app', 'dashboard.search(text)', 'EXECUTE'), 'insurance_app cannot call dashboard.search';
  ASSERT has_function_privilege('insurance_dashboard', 'dashboard.search(text)', 'EXECUTE'), 'insurance_dashboard cannot call dashboard.search';
END
$$;
SELECT 'dashboard._policy_prefix_ids(text)'::regprocedure;
