-- Verify insurance:cron_role on pg
DO $$
BEGIN
  ASSERT (SELECT NOT rolsuper AND rolcanlogin FROM pg_roles WHERE rolname = 'insurance_cron'),
         'insurance_cron is a login and no superuser';
  ASSERT has_database_privilege('insurance_cron', current_database(), 'CONNECT');
  ASSERT NOT has_function_privilege('insurance_app', 'insurance.schedule_job(text, text, text)', 'EXECUTE');
END
$$;
