-- Revert insurance:admin_people from pg: back to its v1.1.0 version. Its functions are dropped
-- and the released script runs as it was, in the same transaction (its BEGIN only warns that one
-- is open; its COMMIT ends both), so that no request finds them missing.
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

DROP FUNCTION admin.audit_about(text, integer);
DROP FUNCTION admin.person_erase(text, text);
DROP FUNCTION admin.person_export(text, text);

\ir ../deploy/admin_people@v1.1.0.sql
