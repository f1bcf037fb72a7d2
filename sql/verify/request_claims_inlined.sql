-- Verify insurance:request_claims_inlined on pg
DO $$
BEGIN
  ASSERT (SELECT bool_and(p.prosqlbody IS NOT NULL AND p.proconfig IS NULL)
            FROM pg_catalog.pg_proc p
           WHERE p.oid IN ('insurance.claims()'::regprocedure, 'insurance.claim(text)'::regprocedure)),
         'claims() and claim() must have SQL-standard bodies and no SET clause (inlinable)';
  ASSERT has_function_privilege('insurance_channel', 'insurance.claim(text)', 'EXECUTE');
  PERFORM set_config('request.jwt.claims', '{"sub": "x"}', true);
  ASSERT insurance.claim('sub') = 'x', 'claim() does not read request.jwt.claims';
  PERFORM set_config('request.jwt.claims', '', true);
  ASSERT insurance.claims() = '{}'::jsonb, 'claims() must read an empty setting as no claims';
END
$$;
