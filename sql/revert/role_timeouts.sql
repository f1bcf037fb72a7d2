-- Revert insurance:role_timeouts from pg
BEGIN;
DO $$
BEGIN
  EXECUTE format('ALTER ROLE insurance_app IN DATABASE %I RESET statement_timeout', current_database());
  EXECUTE format('ALTER ROLE insurance_app IN DATABASE %I RESET lock_timeout', current_database());
  EXECUTE format('ALTER ROLE insurance_cron IN DATABASE %I RESET statement_timeout', current_database());
  EXECUTE format('ALTER ROLE insurance_cron IN DATABASE %I RESET lock_timeout', current_database());
END
$$;
COMMIT;
