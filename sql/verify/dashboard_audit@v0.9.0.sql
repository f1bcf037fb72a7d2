-- Verify insurance:dashboard_audit on pg
SELECT 'dashboard.list_audit(bigint,integer)'::regprocedure;
DO $$
BEGIN
  ASSERT has_function_privilege('insurance_app', 'dashboard.list_audit(bigint,integer)', 'EXECUTE'), 'insurance_app cannot call dashboard.list_audit';
  ASSERT has_function_privilege('insurance_dashboard', 'dashboard.list_audit(bigint,integer)', 'EXECUTE'), 'insurance_dashboard cannot call dashboard.list_audit';
END
$$;
