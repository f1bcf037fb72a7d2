-- Verify insurance:account_ceilings on pg
SELECT kind, account, window_ends, tripped_at FROM insurance.account_ceiling_trips WHERE false;
SELECT kind, trips FROM insurance.account_ceiling_counts WHERE false;
DO $$
BEGIN
  ASSERT NOT has_function_privilege('insurance_app',
    'insurance._report_account_ceiling(text, text, integer, timestamptz)', 'EXECUTE');
  ASSERT NOT has_function_privilege('insurance_anon',
    'insurance._report_account_ceiling(text, text, integer, timestamptz)', 'EXECUTE');
END
$$;
