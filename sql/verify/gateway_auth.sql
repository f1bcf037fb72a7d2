-- Verify insurance:gateway_auth on pg
SELECT 'gateway.authorize(bytea,text)'::regprocedure,
       'gateway.admit(integer)'::regprocedure,
       'gateway.token_channel(integer)'::regprocedure;
DO $$
BEGIN
  ASSERT has_function_privilege('insurance_anon', 'gateway.authorize(bytea,text)', 'EXECUTE'), 'insurance_anon cannot call gateway.authorize';
  ASSERT has_function_privilege('insurance_app', 'gateway.authorize(bytea,text)', 'EXECUTE'), 'insurance_app cannot call gateway.authorize';
  ASSERT has_function_privilege('insurance_channel', 'gateway.admit(integer)', 'EXECUTE'), 'insurance_channel cannot call gateway.admit';
  ASSERT has_function_privilege('insurance_app', 'gateway.token_channel(integer)', 'EXECUTE'), 'insurance_app cannot call gateway.token_channel';
  ASSERT has_function_privilege('insurance_channel', 'gateway.token_channel(integer)', 'EXECUTE'), 'insurance_channel cannot call gateway.token_channel';
END
$$;
-- The rate limit's parameter is named _rate_limit.
SELECT 1 / (proargnames[1] = '_rate_limit')::int FROM pg_catalog.pg_proc
 WHERE oid = 'gateway.admit(integer)'::regprocedure;
