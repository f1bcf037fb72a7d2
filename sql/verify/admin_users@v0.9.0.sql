-- Verify insurance:admin_users on pg
SELECT 'admin.create_dashboard_user(text,text,text)'::regprocedure,
       'admin.list_dashboard_users()'::regprocedure,
       'admin._end_sessions(bigint,text[])'::regprocedure,
       'admin._user_not_found(text,text,text)'::regprocedure,
       'admin.disable_dashboard_user(text,text)'::regprocedure,
       'admin.enable_dashboard_user(text,text)'::regprocedure,
       'admin.set_dashboard_password(text,text,text)'::regprocedure,
       'admin.list_dashboard_sessions(text)'::regprocedure,
       'admin.end_dashboard_sessions(text,text,text[])'::regprocedure;
