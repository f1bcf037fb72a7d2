-- Verify insurance:admin_integrations on pg
SELECT 'admin.set_integration(text,text,jsonb)'::regprocedure,
       'admin.delete_integration(text,text)'::regprocedure,
       'admin.list_integrations()'::regprocedure;
