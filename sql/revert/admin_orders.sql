-- Revert insurance:admin_orders from pg
BEGIN;
SET LOCAL ROLE insurance_owner;

DROP FUNCTION admin.create_order(text,bigint,uuid,text,jsonb);

COMMIT;
