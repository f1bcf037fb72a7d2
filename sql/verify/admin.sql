-- Verify insurance:admin on pg
SELECT 'admin._refused(text,text,jsonb,text,text)'::regprocedure;
