-- Verify insurance:admin_packages on pg
SELECT 'admin.create_package(text,text,text,text,text,jsonb)'::regprocedure,
       'admin.package_json(bigint)'::regprocedure,
       'admin.list_packages()'::regprocedure;
