-- Verify insurance:rate_limits on pg
SELECT 'gateway.admit(integer)'::regprocedure,
       'gateway.validate(integer)'::regprocedure;
SELECT * FROM insurance.rate_limits WHERE false;
DO $$
BEGIN
  ASSERT has_function_privilege('insurance_channel', 'gateway.admit(integer)', 'EXECUTE'), 'insurance_channel cannot call gateway.admit';
  ASSERT has_function_privilege('insurance_channel', 'gateway.validate(integer)', 'EXECUTE'), 'insurance_channel cannot call gateway.validate';
END
$$;
