-- Revert insurance:insurance_retention_job from pg: back to its v1.0.0 version (the released file
-- is re-run: its functions are dropped first; it registers the same jobs again).
BEGIN;
SET LOCAL ROLE insurance_owner;
DROP FUNCTION insurance.purge_expired();
DROP FUNCTION insurance.set_outbox_retention(interval);
DROP FUNCTION insurance.set_cron_history_retention(interval);
COMMIT;
\ir ../deploy/insurance_retention_job@v0.9.0.sql
