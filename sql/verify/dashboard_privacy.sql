-- Verify insurance:dashboard_privacy on pg
SELECT 'dashboard.person_export(text)'::regprocedure,
       'dashboard.person_erase(text)'::regprocedure,
       'dashboard.record_view(text,bigint[],uuid[],text[])'::regprocedure,
       'dashboard.audit_about(text,integer)'::regprocedure,
       'dashboard.view_risk_item(bigint,uuid,text)'::regprocedure,
       'dashboard.view_emission(bigint)'::regprocedure,
       'dashboard._record_view(text,text,bigint[],uuid[],text[])'::regprocedure;
DO $$
BEGIN
  ASSERT has_function_privilege('insurance_dashboard', 'dashboard.record_view(text,bigint[],uuid[],text[])', 'EXECUTE');
  ASSERT has_function_privilege('insurance_dashboard', 'dashboard.person_export(text)', 'EXECUTE');
  ASSERT has_function_privilege('insurance_dashboard', 'dashboard.view_risk_item(bigint,uuid,text)', 'EXECUTE');
  ASSERT NOT has_function_privilege('insurance_holder', 'dashboard.view_emission(bigint)', 'EXECUTE');
END
$$;
