-- Verify insurance:insurance_retention_job on pg
DO $$
BEGIN
  ASSERT has_function_privilege('insurance_cron', 'insurance.purge_expired()', 'EXECUTE');
  ASSERT NOT has_function_privilege('insurance_app', 'insurance.purge_expired()', 'EXECUTE');
  ASSERT NOT has_function_privilege('insurance_app', 'insurance.set_outbox_retention(interval)', 'EXECUTE');
  ASSERT NOT has_function_privilege('insurance_app', 'insurance.set_cron_history_retention(interval)', 'EXECUTE');
END
$$;
