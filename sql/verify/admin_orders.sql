-- Verify insurance:admin_orders on pg
SELECT 'admin.create_order(text,bigint,uuid,text,jsonb)'::regprocedure;
