-- Revert insurance:integrations_retry_sweep from pg
BEGIN;
SELECT insurance.unschedule_job('insurance-retry-sweep-' || current_database());
REVOKE USAGE ON SCHEMA integrations FROM insurance_cron;
SET LOCAL ROLE insurance_owner;
DROP FUNCTION integrations.run_sweep();
DROP FUNCTION integrations.sweep();
COMMIT;
