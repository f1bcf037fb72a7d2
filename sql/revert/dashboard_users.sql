-- Revert insurance:dashboard_users from pg
BEGIN;
DROP TABLE insurance.dashboard_login_failures;
DROP TABLE insurance.dashboard_sessions;
DROP TABLE insurance.dashboard_users;

COMMIT;
