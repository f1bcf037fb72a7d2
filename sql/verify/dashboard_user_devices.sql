-- Verify insurance:dashboard_user_devices on pg
BEGIN;

SELECT device_generation FROM insurance.dashboard_users WHERE false;

ROLLBACK;
