-- Verify insurance:emission_counts on pg
SELECT status, provider, count FROM insurance.emission_counts WHERE false;
SELECT status, provider, delta FROM insurance.emission_count_deltas WHERE false;
DO $$
BEGIN
  ASSERT (SELECT count(*) FROM pg_catalog.pg_trigger
           WHERE tgrelid = 'insurance.integration_emissions'::regclass
             AND tgname LIKE 'integration_emissions_count_%') = 3;
  ASSERT NOT has_function_privilege('insurance_app', 'insurance.fold_emission_counts()', 'EXECUTE');
END
$$;
