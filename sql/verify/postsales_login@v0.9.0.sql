-- Verify insurance:postsales_login on pg
SELECT 'postsales.risk_item_ids_by_holder_email(text)'::regprocedure,
       'postsales.request_otp(text, bytea, integer, inet, integer)'::regprocedure,
       'postsales.verify_otp(text, bytea, integer, inet, integer)'::regprocedure;
DO $$
BEGIN
  ASSERT has_function_privilege('insurance_service', 'postsales.risk_item_ids_by_holder_email(text)', 'EXECUTE'), 'insurance_service cannot call postsales.risk_item_ids_by_holder_email';
  ASSERT has_function_privilege('insurance_anon', 'postsales.request_otp(text, bytea, integer, inet, integer)', 'EXECUTE'), 'insurance_anon cannot call postsales.request_otp';
  ASSERT has_function_privilege('insurance_anon', 'postsales.verify_otp(text, bytea, integer, inet, integer)', 'EXECUTE'), 'insurance_anon cannot call postsales.verify_otp';
END
$$;
