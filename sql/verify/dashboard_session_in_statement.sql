-- Verify insurance:dashboard_session_in_statement on pg
DO $$
BEGIN
  ASSERT has_function_privilege('insurance_dashboard', 'dashboard.session_claims_or_deny(bytea)', 'EXECUTE');
  ASSERT NOT has_function_privilege('insurance_holder', 'dashboard.session_claims_or_deny(bytea)', 'EXECUTE'),
    'only the dashboard role resolves sessions in its statements';
  BEGIN
    PERFORM dashboard.session_claims_or_deny(decode(repeat('00', 32), 'hex'));
    RAISE EXCEPTION 'an unknown session was not refused';
  EXCEPTION WHEN SQLSTATE 'PT401' THEN NULL;
  END;
END
$$;
