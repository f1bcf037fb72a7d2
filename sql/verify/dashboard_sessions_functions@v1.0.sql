-- Verify insurance:dashboard_sessions_functions on pg
SELECT key, failures, window_ends FROM insurance.dashboard_login_failures WHERE false;
DO $$
BEGIN
  ASSERT has_function_privilege('insurance_anon', 'dashboard.session_claims(bytea)', 'EXECUTE');
  ASSERT has_function_privilege('insurance_anon', 'dashboard.login_succeeded(text, text, bytea, integer, inet, text)', 'EXECUTE');
  ASSERT NOT has_function_privilege('insurance_holder', 'dashboard.login_user(text, inet)', 'EXECUTE'),
    'only the anonymous role and the app may read password hashes';
  ASSERT dashboard.session_claims(decode(repeat('00', 32), 'hex')) IS NULL;
END
$$;
