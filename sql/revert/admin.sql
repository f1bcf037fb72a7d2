-- Revert insurance:admin from pg
BEGIN;
SET LOCAL ROLE insurance_owner;

DROP FUNCTION admin._refused(text,text,jsonb,text,text);

COMMIT;
