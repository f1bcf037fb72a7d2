-- Revert insurance:integrations_retry_sweep from pg: back to its v1.0.0 version (the released
-- file included as it is, after the reworked functions are dropped; it schedules the same job).
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;
DROP FUNCTION integrations.run_sweep();
DROP FUNCTION integrations.sweep();
RESET ROLE;
-- The released file's own BEGIN only warns inside this transaction; its COMMIT ends it.
\ir ../deploy/integrations_retry_sweep@v0.9.0.sql
