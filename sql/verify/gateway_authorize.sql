-- Verify insurance:gateway_authorize on pg
SELECT 'gateway.authorize(bytea, text)'::regprocedure;
DO $$
BEGIN
  ASSERT has_function_privilege('insurance_anon', 'gateway.authorize(bytea, text)', 'EXECUTE'), 'insurance_anon cannot call gateway.authorize';
END
$$;
