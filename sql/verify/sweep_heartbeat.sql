-- Verify insurance:sweep_heartbeat on pg
SELECT job, last_run_at, last_result FROM insurance.job_runs WHERE false;
DO $$
BEGIN
  ASSERT has_function_privilege('insurance_service', 'integrations.run_sweep()', 'EXECUTE');
  ASSERT NOT has_function_privilege('insurance_holder', 'integrations.run_sweep()', 'EXECUTE');
END
$$;
