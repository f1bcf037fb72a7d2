-- Revert insurance:admin_packages from pg
BEGIN;
SET LOCAL ROLE insurance_owner;

DROP FUNCTION admin.list_packages();
DROP FUNCTION admin.package_json(bigint);
DROP FUNCTION admin.create_package(text,text,text,text,text,jsonb);

COMMIT;
