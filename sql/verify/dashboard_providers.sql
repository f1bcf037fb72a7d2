-- Verify insurance:dashboard_providers on pg
SELECT 'dashboard.providers_health(integer)'::regprocedure, 'dashboard._p95_ms(integer[])'::regprocedure,
       'dashboard.pause_provider(text,timestamptz,text)'::regprocedure, 'dashboard.resume_provider(text,text)'::regprocedure;
DO $$
BEGIN
  ASSERT has_function_privilege('insurance_dashboard', 'dashboard.providers_health(integer)', 'EXECUTE'),
         'insurance_dashboard cannot call dashboard.providers_health';
  ASSERT has_function_privilege('insurance_dashboard', 'dashboard.pause_provider(text,timestamptz,text)', 'EXECUTE'),
         'insurance_dashboard cannot call dashboard.pause_provider';
  ASSERT dashboard._p95_ms(ARRAY[0, 0, 10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]::integer[]) = 100, 'p95 of answers between 50 and 100 ms';
END
$$;
