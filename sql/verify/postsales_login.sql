-- Verify insurance:postsales_login on pg
SELECT 'postsales.risk_item_ids_by_holder_email(text)'::regprocedure,
       'postsales.request_otp(text, bytea, integer, inet, integer)'::regprocedure,
       'postsales.verify_otp(text, bytea, integer, inet, integer)'::regprocedure,
       'postsales.request_otp(text, bytea, integer, inet, integer, boolean)'::regprocedure,
       'postsales.verify_otp(text, bytea, integer, inet, integer, boolean)'::regprocedure;
DO $$
BEGIN
  ASSERT has_function_privilege('insurance_service', 'postsales.risk_item_ids_by_holder_email(text)', 'EXECUTE'), 'insurance_service cannot call postsales.risk_item_ids_by_holder_email';
  ASSERT has_function_privilege('insurance_anon', 'postsales.request_otp(text, bytea, integer, inet, integer)', 'EXECUTE'), 'insurance_anon cannot call postsales.request_otp';
  ASSERT has_function_privilege('insurance_anon', 'postsales.verify_otp(text, bytea, integer, inet, integer)', 'EXECUTE'), 'insurance_anon cannot call postsales.verify_otp';
  ASSERT has_function_privilege('insurance_anon', 'postsales.request_otp(text, bytea, integer, inet, integer, boolean)', 'EXECUTE'), 'insurance_anon cannot call postsales.request_otp with a device';
  ASSERT has_function_privilege('insurance_anon', 'postsales.verify_otp(text, bytea, integer, inet, integer, boolean)', 'EXECUTE'), 'insurance_anon cannot call postsales.verify_otp with a device';
END
$$;
