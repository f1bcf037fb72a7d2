-- Revert insurance:dashboard_user_devices from pg
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

ALTER TABLE insurance.dashboard_users DROP COLUMN device_generation;

COMMIT;
