-- Verify insurance:admin_providers on pg
SELECT 'admin.pause_provider(text,text,timestamptz)'::regprocedure, 'admin.resume_provider(text,text)'::regprocedure,
       'admin.list_provider_pauses()'::regprocedure;
