-- Verify insurance:postsales_emission on pg
DO $$
BEGIN
  ASSERT has_function_privilege('insurance_holder', 'postsales.begin_emission(bigint, uuid, text, integer)', 'EXECUTE');
  ASSERT NOT has_function_privilege('insurance_anon', 'postsales.begin_emission(bigint, uuid, text, integer)', 'EXECUTE');
END
$$;
