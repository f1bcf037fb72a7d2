-- Verify insurance:insurance_metrics on pg
DO $$
BEGIN
  ASSERT has_function_privilege('insurance_app', 'insurance.read_metrics()', 'EXECUTE');
  ASSERT NOT has_function_privilege('insurance_holder', 'insurance.read_metrics()', 'EXECUTE');
  ASSERT pg_catalog.pg_get_functiondef('insurance.read_metrics()'::regprocedure) LIKE '%pg_stat_archiver%',
    'read_metrics does not read pg_stat_archiver';
END
$$;
