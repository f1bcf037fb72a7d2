-- Revert insurance:insurance_metrics from pg
BEGIN;
DROP FUNCTION insurance.read_metrics();
COMMIT;
