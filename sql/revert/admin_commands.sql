-- Revert insurance:admin_commands from pg
BEGIN;
SET LOCAL ROLE insurance_owner;
DROP SCHEMA admin CASCADE;
COMMIT;
