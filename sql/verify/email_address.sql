-- Verify insurance:email_address on pg
DO $$
BEGIN
  ASSERT 'ada@example.com'::insurance.email = 'ada@example.com';
  BEGIN
    PERFORM 'Ada@Example.com'::insurance.email;
    RAISE EXCEPTION 'insurance.email accepted upper case';
  EXCEPTION WHEN check_violation THEN NULL;
  END;
  ASSERT (SELECT atttypid = 'insurance.email'::regtype FROM pg_attribute
           WHERE attrelid = 'insurance.dashboard_users'::regclass AND attname = 'email');
  ASSERT (SELECT count(*) = 2 FROM pg_constraint
           WHERE conname IN ('beneficiaries_email_check', 'authorized_claimants_email_check')
             AND pg_get_constraintdef(oid) LIKE '%insurance.email%');
END
$$;
