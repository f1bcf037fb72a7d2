-- Revert insurance:dashboard_outbox from pg
BEGIN;
SET LOCAL ROLE insurance_owner;

REVOKE USAGE ON SCHEMA outbox FROM insurance_dashboard;
DROP FUNCTION dashboard.retry_outbox(bigint[]);
DROP FUNCTION dashboard.list_outbox(boolean,bigint,integer);
DROP FUNCTION dashboard._outbox_url(text);

COMMIT;
