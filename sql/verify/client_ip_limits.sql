-- Verify insurance:client_ip_limits on pg
SELECT kind, ip, window_start, hits FROM insurance.client_ip_limits WHERE false;
DO $$
BEGIN
  ASSERT NOT has_function_privilege('insurance_anon', 'insurance._take_ip_slot(text, inet, integer)', 'EXECUTE');
END
$$;
