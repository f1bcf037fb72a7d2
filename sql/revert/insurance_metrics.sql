-- Revert insurance:insurance_metrics from pg: back to its v1.0.0 version (no archiver), the
-- frozen deploy included as it is. It creates the function (no OR REPLACE), so the reworked one
-- is dropped first, in the same transaction: a scrape never finds the function missing.
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;
DROP FUNCTION insurance.read_metrics();
\ir ../deploy/insurance_metrics@v0.9.0.sql
