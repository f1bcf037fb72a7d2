-- Verify insurance:dashboard_sessions on pg
SELECT 'dashboard._login_keys(text,inet)'::regprocedure,
       'dashboard.login_user(text,inet)'::regprocedure,
       'dashboard.login_succeeded(text,text,bytea,integer,inet,text)'::regprocedure,
       'dashboard.session_claims(bytea)'::regprocedure,
       'dashboard.logout(bytea)'::regprocedure,
       'dashboard.session_claims_or_deny(bytea)'::regprocedure,
       'dashboard._device_known(text,bigint,integer)'::regprocedure,
       'dashboard.login_user(text,inet,bigint,integer)'::regprocedure,
       'dashboard.login_succeeded(text,text,bytea,integer,inet,text,bigint,integer)'::regprocedure;
DO $$
BEGIN
  ASSERT has_function_privilege('insurance_anon', 'dashboard.login_user(text,inet)', 'EXECUTE'), 'insurance_anon cannot call dashboard.login_user';
  ASSERT has_function_privilege('insurance_app', 'dashboard.login_user(text,inet)', 'EXECUTE'), 'insurance_app cannot call dashboard.login_user';
  ASSERT has_function_privilege('insurance_anon', 'dashboard.login_succeeded(text,text,bytea,integer,inet,text)', 'EXECUTE'), 'insurance_anon cannot call dashboard.login_succeeded';
  ASSERT has_function_privilege('insurance_app', 'dashboard.login_succeeded(text,text,bytea,integer,inet,text)', 'EXECUTE'), 'insurance_app cannot call dashboard.login_succeeded';
  ASSERT has_function_privilege('insurance_anon', 'dashboard.session_claims(bytea)', 'EXECUTE'), 'insurance_anon cannot call dashboard.session_claims';
  ASSERT has_function_privilege('insurance_app', 'dashboard.session_claims(bytea)', 'EXECUTE'), 'insurance_app cannot call dashboard.session_claims';
  ASSERT has_function_privilege('insurance_anon', 'dashboard.logout(bytea)', 'EXECUTE'), 'insurance_anon cannot call dashboard.logout';
  ASSERT has_function_privilege('insurance_app', 'dashboard.logout(bytea)', 'EXECUTE'), 'insurance_app cannot call dashboard.logout';
  ASSERT has_function_privilege('insurance_app', 'dashboard.session_claims_or_deny(bytea)', 'EXECUTE'), 'insurance_app cannot call dashboard.session_claims_or_deny';
  ASSERT has_function_privilege('insurance_dashboard', 'dashboard.session_claims_or_deny(bytea)', 'EXECUTE'), 'insurance_dashboard cannot call dashboard.session_claims_or_deny';
  ASSERT has_function_privilege('insurance_anon', 'dashboard.login_user(text,inet,bigint,integer)', 'EXECUTE'), 'insurance_anon cannot call dashboard.login_user with a device';
  ASSERT has_function_privilege('insurance_app', 'dashboard.login_user(text,inet,bigint,integer)', 'EXECUTE'), 'insurance_app cannot call dashboard.login_user with a device';
  ASSERT has_function_privilege('insurance_anon', 'dashboard.login_succeeded(text,text,bytea,integer,inet,text,bigint,integer)', 'EXECUTE'), 'insurance_anon cannot call dashboard.login_succeeded with a device';
  ASSERT has_function_privilege('insurance_app', 'dashboard.login_succeeded(text,text,bytea,integer,inet,text,bigint,integer)', 'EXECUTE'), 'insurance_app cannot call dashboard.login_succeeded with a device';
  ASSERT NOT has_function_privilege('insurance_anon', 'dashboard._device_known(text,bigint,integer)', 'EXECUTE'), 'dashboard._device_known is callable by insurance_anon';
END
$$;

