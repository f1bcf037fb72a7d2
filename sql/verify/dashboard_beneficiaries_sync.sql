-- Verify insurance:dashboard_beneficiaries_sync on pg
SELECT 'dashboard.begin_beneficiaries_sync(bigint,uuid,text,integer)'::regprocedure;
DO $$
BEGIN
  ASSERT has_function_privilege('insurance_app', 'dashboard.begin_beneficiaries_sync(bigint,uuid,text,integer)', 'EXECUTE'), 'insurance_app cannot call dashboard.begin_beneficiaries_sync';
  ASSERT has_function_privilege('insurance_dashboard', 'dashboard.begin_beneficiaries_sync(bigint,uuid,text,integer)', 'EXECUTE'), 'insurance_dashboard cannot call dashboard.begin_beneficiaries_sync';
END
$$;
