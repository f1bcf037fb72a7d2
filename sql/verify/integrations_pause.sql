-- Verify insurance:integrations_pause on pg
SELECT 'integrations.pause_provider(text,timestamptz)'::regprocedure,
       'integrations.resume_provider(text)'::regprocedure,
       'integrations.paused_providers()'::regprocedure;
DO $$
BEGIN
  ASSERT NOT has_function_privilege('insurance_dashboard', 'integrations.pause_provider(text,timestamptz)', 'EXECUTE'),
         'only audited callers may pause a provider';
  ASSERT has_function_privilege('insurance_dashboard', 'integrations.paused_providers()', 'EXECUTE'),
         'insurance_dashboard cannot read the pauses';
END
$$;
