-- Revert insurance:admin_users from pg
BEGIN;
SET LOCAL ROLE insurance_owner;

DROP FUNCTION admin.end_dashboard_sessions(text,text,text[]);
DROP FUNCTION admin.list_dashboard_sessions(text);
DROP FUNCTION admin.set_dashboard_password(text,text,text);
DROP FUNCTION admin.enable_dashboard_user(text,text);
DROP FUNCTION admin.disable_dashboard_user(text,text);
DROP FUNCTION admin._user_not_found(text,text,text);
DROP FUNCTION admin._end_sessions(bigint,text[]);
DROP FUNCTION admin.list_dashboard_users();
DROP FUNCTION admin.create_dashboard_user(text,text,text);

COMMIT;
