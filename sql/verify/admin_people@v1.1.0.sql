-- Verify insurance:admin_people on pg
SELECT 'admin.person_export(text,text)'::regprocedure,
       'admin.person_erase(text,text)'::regprocedure,
       'admin.audit_about(text,integer)'::regprocedure;
DO $$
BEGIN
  ASSERT NOT has_function_privilege('insurance_app', 'admin.person_erase(text,text)', 'EXECUTE');
END
$$;
