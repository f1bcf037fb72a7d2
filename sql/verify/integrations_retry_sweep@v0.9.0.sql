-- Verify insurance:integrations_retry_sweep on pg
DO $$
BEGIN
  ASSERT has_function_privilege('insurance_cron', 'integrations.run_sweep()', 'EXECUTE');
  ASSERT has_function_privilege('insurance_service', 'integrations.sweep()', 'EXECUTE');
  ASSERT pg_get_functiondef('integrations.sweep()'::regprocedure) NOT LIKE '%delivered_at < %',
         'delivered rows are left to the retention job';
  ASSERT pg_get_functiondef('integrations.sweep()'::regprocedure) LIKE '%require_role(%';
END
$$;
