-- Verify insurance:rate_limits on pg
SELECT channel_id, window_start, hits FROM insurance.rate_limits WHERE false;
DO $$
BEGIN
  ASSERT has_function_privilege('insurance_channel', 'gateway.admit(integer)', 'EXECUTE');
  ASSERT NOT has_function_privilege('insurance_app', 'gateway.admit(integer)', 'EXECUTE'),
         'admit() is no entry point';
  ASSERT has_function_privilege('insurance_app', 'gateway.validate(integer)', 'EXECUTE');
END
$$;
