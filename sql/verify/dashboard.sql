-- Verify insurance:dashboard on pg
SELECT 'dashboard._actor()'::regprocedure;
DO $$
BEGIN
  ASSERT has_function_privilege('insurance_dashboard', 'dashboard._actor()', 'EXECUTE'), 'insurance_dashboard cannot call dashboard._actor';
END
$$;
