-- Verify insurance:dashboard_people on pg
SELECT 'dashboard._as_backoffice()'::regprocedure, 'dashboard.list_users()'::regprocedure,
       'dashboard.disable_user(text)'::regprocedure, 'dashboard.enable_user(text)'::regprocedure,
       'dashboard.end_user_sessions(text)'::regprocedure;
DO $$
BEGIN
  ASSERT has_function_privilege('insurance_dashboard', 'dashboard.list_users()', 'EXECUTE'), 'insurance_dashboard cannot call dashboard.list_users';
  ASSERT has_function_privilege('insurance_app', 'dashboard.disable_user(text)', 'EXECUTE'), 'insurance_app cannot call dashboard.disable_user';
  ASSERT has_function_privilege('insurance_dashboard', 'dashboard.enable_user(text)', 'EXECUTE'), 'insurance_dashboard cannot call dashboard.enable_user';
  ASSERT has_function_privilege('insurance_dashboard', 'dashboard.end_user_sessions(text)', 'EXECUTE'), 'insurance_dashboard cannot call dashboard.end_user_sessions';
  ASSERT NOT has_function_privilege('insurance_holder', 'dashboard.disable_user(text)', 'EXECUTE'), 'insurance_holder may call dashboard.disable_user';
END
$$;
