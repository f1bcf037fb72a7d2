-- Verify insurance:sweep_as_cron on pg
DO $$
BEGIN
  ASSERT has_function_privilege('insurance_cron', 'integrations.sweep()', 'EXECUTE');
  ASSERT pg_get_functiondef('integrations.sweep()'::regprocedure) NOT LIKE '%delivered_at < %',
         'delivered rows are left to the retention job';
  ASSERT pg_get_functiondef('integrations.sweep()'::regprocedure) LIKE '%require_role(''insurance_service'')%';
END
$$;
