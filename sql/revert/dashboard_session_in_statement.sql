-- Revert insurance:dashboard_session_in_statement from pg
BEGIN;
SET LOCAL ROLE insurance_owner;
DROP FUNCTION dashboard.session_claims_or_deny(bytea);
COMMIT;
