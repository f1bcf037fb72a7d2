-- Verify insurance:postsales_otp_functions on pg
DO $$
BEGIN
  ASSERT has_function_privilege('insurance_anon', 'postsales.request_otp(text, bytea, integer)', 'EXECUTE');
  ASSERT has_function_privilege('insurance_anon', 'postsales.verify_otp(text, bytea, integer)', 'EXECUTE');
  ASSERT NOT has_function_privilege('insurance_holder', 'postsales.postsales_risk_item_ids_by_holder_email(text)', 'EXECUTE');
  ASSERT NOT has_table_privilege('insurance_anon', 'insurance.postsales_otp', 'SELECT');
END
$$;
