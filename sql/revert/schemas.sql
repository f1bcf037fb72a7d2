-- Revert insurance:schemas from pg
BEGIN;

ALTER DEFAULT PRIVILEGES FOR ROLE insurance_owner GRANT EXECUTE ON FUNCTIONS TO PUBLIC;
DROP SCHEMA webhooks;
DROP SCHEMA admin;
DROP SCHEMA dashboard;
DROP SCHEMA outbox;
DROP SCHEMA integrations;
DROP SCHEMA gateway;
DROP SCHEMA postsales;
DROP SCHEMA insurance;
-- pgcrypto stays: other software of this database may use it.

COMMIT;
