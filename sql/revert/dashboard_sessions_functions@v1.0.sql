-- Revert insurance:dashboard_sessions_functions from pg
BEGIN;
DROP FUNCTION dashboard.logout(bytea);
DROP FUNCTION dashboard.session_claims(bytea);
DROP FUNCTION dashboard.login_succeeded(text, text, bytea, integer, inet, text);
DROP FUNCTION dashboard.login_failed(text, inet);
DROP FUNCTION dashboard.login_user(text, inet);
DROP FUNCTION dashboard._login_keys(text, inet);
DROP TABLE insurance.dashboard_login_failures;
COMMIT;
