-- Revert insurance:dashboard_people from pg
BEGIN;
SET LOCAL ROLE insurance_owner;

DROP FUNCTION dashboard.end_user_sessions(text);
DROP FUNCTION dashboard.enable_user(text);
DROP FUNCTION dashboard.disable_user(text);
DROP FUNCTION dashboard.list_users();
DROP FUNCTION dashboard._as_backoffice();

COMMIT;
