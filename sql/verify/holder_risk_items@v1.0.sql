-- Verify insurance:holder_risk_items on pg
DO $$
BEGIN
  ASSERT has_function_privilege('insurance_holder', 'postsales.my_risk_items()', 'EXECUTE');
  ASSERT has_function_privilege('insurance_app', 'postsales.update_risk_item(bigint, jsonb)', 'EXECUTE');
  ASSERT NOT has_function_privilege('insurance_anon', 'postsales.risk_item(bigint)', 'EXECUTE');
  ASSERT EXISTS (SELECT FROM pg_catalog.pg_trigger WHERE tgname = 'beneficiaries_check_shares'
                   AND tgrelid = 'insurance.beneficiaries'::regclass), 'shares trigger missing';
END
$$;
