-- Revert insurance:insurance_retention_job from pg
BEGIN;
SELECT insurance.unschedule_job('insurance-retention-' || current_database());
-- The cron history job is the cluster's (every database of this project registers it): it stays.
DO $$
BEGIN
  EXECUTE format('ALTER DATABASE %I RESET insurance.outbox_retention', current_database());
END
$$;
REVOKE USAGE ON SCHEMA insurance FROM insurance_cron;
SET LOCAL ROLE insurance_owner;
DROP FUNCTION insurance.purge_expired(), insurance.set_outbox_retention(interval),
              insurance.set_cron_history_retention(interval);
COMMIT;
