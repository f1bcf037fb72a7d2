-- Verify insurance:insurance_metrics on pg
DO $$
BEGIN
  ASSERT has_function_privilege('insurance_app', 'insurance.read_metrics()', 'EXECUTE');
  ASSERT NOT has_function_privilege('insurance_holder', 'insurance.read_metrics()', 'EXECUTE');
END
$$;
