-- Verify insurance:insurance_identity on pg
DO $$
BEGIN
  ASSERT has_function_privilege('insurance_holder', 'insurance.claim(text)', 'EXECUTE');
  ASSERT has_function_privilege('insurance_anon', 'insurance.require_role(text[])', 'EXECUTE');
  PERFORM set_config('request.jwt.claims', '{"email": "a@b.c"}', true);
  ASSERT insurance.claim('email') = 'a@b.c', 'claim() does not read request.jwt.claims';
  PERFORM set_config('request.jwt.claims', '', true);
  ASSERT insurance.claims() = '{}'::jsonb, 'claims() must read an empty setting as no claims';
END
$$;
