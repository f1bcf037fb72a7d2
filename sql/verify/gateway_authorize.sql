-- Verify insurance:gateway_authorize on pg
DO $$
BEGIN
  ASSERT has_function_privilege('insurance_anon', 'gateway.authorize(bytea, text)', 'EXECUTE');
  ASSERT NOT has_function_privilege('insurance_holder', 'gateway.authorize(bytea, text)', 'EXECUTE'),
         'only anon (and the app login) may call authorize';
END
$$;
DO $$
BEGIN
  ASSERT pg_get_functiondef('gateway.authorize(bytea, text)'::regprocedure) LIKE '%require_role%key_generation%',
         'authorize is guarded and returns the key generation';
END
$$;
