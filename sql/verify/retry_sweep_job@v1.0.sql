-- Verify insurance:retry_sweep_job on pg
DO $$
BEGIN
  ASSERT has_function_privilege('insurance_service', 'integrations.sweep()', 'EXECUTE');
END
$$;
