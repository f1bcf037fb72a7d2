-- Verify insurance:provider_pauses on pg
SELECT provider, paused_at, until FROM insurance.provider_pauses WHERE false;
DO $$
BEGIN
  ASSERT has_table_privilege('insurance_dashboard', 'insurance.provider_pauses', 'SELECT'),
         'insurance_dashboard cannot read insurance.provider_pauses';
END
$$;
