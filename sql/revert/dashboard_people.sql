-- Revert insurance:dashboard_people from pg: back to its v1.0.0 version. Its functions are
-- dropped and the released script runs as it was, in the same transaction (its BEGIN only warns
-- that one is open; its COMMIT ends both), so that no request finds them missing.
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

DROP FUNCTION dashboard.end_user_sessions(text);
DROP FUNCTION dashboard.enable_user(text);
DROP FUNCTION dashboard.disable_user(text);
DROP FUNCTION dashboard.list_users();
DROP FUNCTION dashboard._as_backoffice();

\ir ../deploy/dashboard_people@v1.0.0.sql
