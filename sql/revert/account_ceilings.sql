-- Revert insurance:account_ceilings from pg
BEGIN;
DROP FUNCTION insurance._report_account_ceiling(text, text, integer, timestamptz);
DROP TABLE insurance.account_ceiling_counts;
DROP TABLE insurance.account_ceiling_trips;
COMMIT;
