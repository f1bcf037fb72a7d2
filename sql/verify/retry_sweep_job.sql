-- Verify insurance:retry_sweep_job on pg
DO $$
BEGIN
  ASSERT has_function_privilege('insurance_service', 'integrations.sweep()', 'EXECUTE');
END
$$;
DO $$
BEGIN
  ASSERT pg_catalog.pg_get_functiondef('integrations.sweep()'::regprocedure) LIKE '%require_role%';
END
$$;
