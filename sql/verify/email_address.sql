-- Verify insurance:email_address on pg
DO $$
BEGIN
  ASSERT 'ada@example.com'::insurance.email = 'ada@example.com';
  BEGIN
    PERFORM 'Ada@Example.com'::insurance.email;
    RAISE EXCEPTION 'insurance.email accepted upper case';
  EXCEPTION WHEN check_violation THEN NULL;
  END;
END
$$;
