-- Revert insurance:dashboard_audit from pg: back to its released version (v0.9.0, unchanged in
-- v1.0.0). Its function is dropped and the released script runs as it was, in the same
-- transaction (its BEGIN only warns that one is open; its COMMIT ends both), so that no request
-- finds it missing.
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

DROP FUNCTION dashboard.list_audit(bigint, integer);

\ir ../deploy/dashboard_audit@v0.9.0.sql
