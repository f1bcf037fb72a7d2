-- Verify insurance:dashboard_outbox on pg
SELECT 'dashboard._outbox_url(text)'::regprocedure,
       'dashboard.list_outbox(boolean,bigint,integer)'::regprocedure,
       'dashboard.retry_outbox(bigint[])'::regprocedure;
DO $$
BEGIN
  ASSERT has_function_privilege('insurance_dashboard', 'dashboard._outbox_url(text)', 'EXECUTE'), 'insurance_dashboard cannot call dashboard._outbox_url';
  ASSERT has_function_privilege('insurance_app', 'dashboard.list_outbox(boolean,bigint,integer)', 'EXECUTE'), 'insurance_app cannot call dashboard.list_outbox';
  ASSERT has_function_privilege('insurance_dashboard', 'dashboard.list_outbox(boolean,bigint,integer)', 'EXECUTE'), 'insurance_dashboard cannot call dashboard.list_outbox';
  ASSERT has_function_privilege('insurance_app', 'dashboard.retry_outbox(bigint[])', 'EXECUTE'), 'insurance_app cannot call dashboard.retry_outbox';
  ASSERT has_function_privilege('insurance_dashboard', 'dashboard.retry_outbox(bigint[])', 'EXECUTE'), 'insurance_dashboard cannot call dashboard.retry_outbox';
END
$$;

