-- Revert insurance:admin_integrations from pg
BEGIN;
SET LOCAL ROLE insurance_owner;

DROP FUNCTION admin.list_integrations();
DROP FUNCTION admin.delete_integration(text,text);
DROP FUNCTION admin.set_integration(text,text,jsonb);

COMMIT;
