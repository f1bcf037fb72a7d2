-- Deploy insurance:dashboard_user_devices to pg
-- A back-office user's device generation (docs/security.md "Devices"): device tokens carry it,
-- dashboard.login_user compares it in the call that reserves the attempt, admin._end_sessions
-- bumps it (disable, a new password, ended sessions), which ends every device token at once.
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

-- A constant default: no table rewrite (PostgreSQL 11+), a brief lock only.
-- squawk-ignore prefer-bigint-over-int -- bumped only by an operator's command, as the JWT claim `gen`
ALTER TABLE insurance.dashboard_users ADD COLUMN device_generation integer NOT NULL DEFAULT 0;
COMMENT ON COLUMN insurance.dashboard_users.device_generation IS
  'Device tokens of this user name it; bumped when the user is disabled, the password changes or sessions are ended';

COMMIT;
