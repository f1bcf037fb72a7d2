-- Revert insurance:email_address from pg
BEGIN;
DROP DOMAIN insurance.email;
COMMIT;
